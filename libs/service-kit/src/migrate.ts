import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import postgres from "postgres";
import type { Sql } from "./db.ts";

/** Service names become schema and role names, so they are restricted to plain lower-case identifiers. */
const SERVICE_NAME_RE = /^[a-z][a-z0-9_]{0,40}$/;
/** Serialises migrateAll runs on one database (advisory locks are scoped to a database). */
const MIGRATE_LOCK_KEY = "treasury.migrate";

/** A concurrent CREATE ROLE on the same cluster loses with one of these; the role then exists, which is all we need. */
const ROLE_RACE_CODES = new Set(["42710", "23505"]);

function kitTablesDdl(schema: string): string {
  const s = `"${schema}"`;
  return `
    create table if not exists ${s}.schema_migrations (
      version text primary key,
      applied_at timestamptz not null default now()
    );
    create table if not exists ${s}.outbox (
      seq bigserial primary key,
      id text unique not null,
      org_id text not null,
      livemode boolean not null,
      type text not null,
      subject text not null,
      payload jsonb not null,
      headers jsonb not null default '{}',
      created_at timestamptz not null default now(),
      published_at timestamptz,
      attempts int not null default 0
    );
    create table if not exists ${s}.event_seq (
      org_id text not null,
      livemode boolean not null,
      last bigint not null,
      primary key (org_id, livemode)
    );
    create table if not exists ${s}.inbox (
      consumer text not null,
      event_id text not null,
      processed_at timestamptz not null default now(),
      primary key (consumer, event_id)
    );
    create table if not exists ${s}.sandbox_clocks (
      org_id text primary key,
      advanced_seconds bigint not null check (advanced_seconds >= 0),
      updated_at timestamptz not null default now()
    );
    ${riskGateDdl(s)}
    ${auditLogDdl(schema)}`;
}

/**
 * The money path's copy of its orgs' risk fail modes (learnt from every evaluation answer, read when risk does not
 * answer), and the movements that went ahead or were refused without an evaluation (risk-gate.ts).
 */
function riskGateDdl(s: string): string {
  return `
    create table if not exists ${s}.risk_fail_modes (
      org_id text not null,
      livemode boolean not null,
      modes jsonb not null,
      updated_at timestamptz not null default now(),
      primary key (org_id, livemode)
    );
    create table if not exists ${s}.risk_fail_safes (
      org_id text not null,
      livemode boolean not null,
      key text not null,
      operation text not null,
      amount bigint not null,
      mode text not null check (mode in ('open', 'closed')),
      cause text not null,
      created_at timestamptz not null default now(),
      primary key (org_id, livemode, key)
    );`;
}

/**
 * The operator actions a service performed (admin.ts): who, what, to which ids, why, how it ended. Rows are never
 * updated or deleted, by any role: the grants every migration run gives the service role cannot undo a trigger.
 */
function auditLogDdl(schema: string): string {
  const s = `"${schema}"`;
  return `
    create table if not exists ${s}.audit_log (
      id bigint generated always as identity primary key,
      at timestamptz not null default now(),
      actor text not null check (length(actor) between 1 and 255),
      action text not null check (action ~ '^[a-z]+\\.[a-z][a-z-]*$'),
      org_id text,
      livemode boolean,
      target_ids text[] not null default '{}',
      reason text check (reason is null or length(reason) <= 1000),
      outcome text not null check (outcome in ('succeeded', 'failed', 'unknown')),
      error_code text,
      error text,
      details jsonb not null default '{}'
    );
    create or replace function ${s}.audit_log_append_only() returns trigger language plpgsql as $$
    begin
      raise exception '${schema}.audit_log is append-only (% refused)', tg_op using errcode = '42501';
    end $$;
    do $$ begin
      if not exists (select 1 from pg_trigger where tgname = 'audit_log_no_update' and tgrelid = '${s}.audit_log'::regclass) then
        create trigger audit_log_no_update before update or delete on ${s}.audit_log
          for each statement execute function ${s}.audit_log_append_only();
      end if;
      if not exists (select 1 from pg_trigger where tgname = 'audit_log_no_truncate' and tgrelid = '${s}.audit_log'::regclass) then
        create trigger audit_log_no_truncate before truncate on ${s}.audit_log
          for each statement execute function ${s}.audit_log_append_only();
      end if;
    end $$;`;
}

/**
 * The kit tables' indexes. Each is looked up in the catalog first and built only when missing: even
 * `create index if not exists` takes a SHARE lock on its table before it finds the index there, which waits for
 * every open transaction that writes the table and holds up every later writer behind it, on every deploy.
 * On an empty table a missing index is built at once; on a table with rows (an index added to deployments whose
 * outbox or inbox already hold a backlog: the retention indexes) it is built CONCURRENTLY, so the business
 * transactions writing events or claims go on while it builds. A concurrent build that was interrupted leaves an
 * invalid index behind: it is dropped and built again.
 */
const KIT_INDEXES: readonly { name: string; table: string; definition: string }[] = [
  { name: "outbox_unpublished_idx", table: "outbox", definition: "(seq) where published_at is null" },
  { name: "outbox_published_idx", table: "outbox", definition: "(published_at) where published_at is not null" },
  { name: "inbox_processed_idx", table: "inbox", definition: "(processed_at)" },
  { name: "audit_log_at_idx", table: "audit_log", definition: "(at desc, id desc)" },
  { name: "audit_log_org_idx", table: "audit_log", definition: "(org_id, at desc, id desc) where org_id is not null" },
  { name: "audit_log_action_idx", table: "audit_log", definition: "(action, at desc, id desc)" },
  { name: "audit_log_targets_idx", table: "audit_log", definition: "using gin (target_ids)" },
];

async function ensureKitIndexes(sql: Sql, schema: string): Promise<void> {
  for (const ix of KIT_INDEXES) {
    const [existing] = await sql<{ valid: boolean }[]>`
      select i.indisvalid as valid from pg_index i
      join pg_class c on c.oid = i.indexrelid join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = ${schema} and c.relname = ${ix.name}`;
    if (existing?.valid === true) continue;
    if (existing !== undefined) await sql.unsafe(`drop index concurrently if exists "${schema}".${ix.name}`);
    const [rows] = await sql.unsafe<{ any: boolean }[]>(`select exists (select 1 from "${schema}".${ix.table}) as any`);
    const concurrently = rows?.any === true ? " concurrently" : "";
    await sql.unsafe(`create index${concurrently} if not exists ${ix.name} on "${schema}".${ix.table} ${ix.definition}`);
  }
}

function grantsDdl(schema: string, role: string): string {
  const s = `"${schema}"`;
  const r = `"${role}"`;
  return `
    grant usage on schema ${s} to ${r};
    grant select, insert, update, delete on all tables in schema ${s} to ${r};
    grant usage, select on all sequences in schema ${s} to ${r};
    alter default privileges in schema ${s} grant select, insert, update, delete on tables to ${r};
    alter default privileges in schema ${s} grant usage, select on sequences to ${r};
    revoke all on ${s}.schema_migrations from ${r};`;
}

/** A string literal for DDL, which takes no bind parameters. */
const literal = (value: string): string => `'${value.replace(/'/g, "''")}'`;

/**
 * Creates a service's login role, with the password given (generated and kept as a secret, never derived from the
 * role's name) or none. An existing role gets a given password too. Without one nothing is altered: altering a
 * shared catalog row from parallel migrations would race ("tuple concurrently updated"), and only a single
 * migrating process (the dev stack, the local compose stack) passes passwords.
 */
async function ensureRole(sql: Sql, role: string, password: string | undefined): Promise<void> {
  const [existing] = await sql`select 1 as one from pg_roles where rolname = ${role}`;
  if (existing) {
    if (password !== undefined) await sql.unsafe(`alter role "${role}" password ${literal(password)}`);
    return;
  }
  // Role names are validated identifiers; the password is quoted as a literal.
  const withPassword = password === undefined ? "" : ` password ${literal(password)}`;
  try {
    await sql.unsafe(`create role "${role}" login${withPassword}`);
  } catch (e) {
    if (!(e instanceof postgres.PostgresError && ROLE_RACE_CODES.has(e.code))) throw e;
  }
}

async function ensureSchema(sql: Sql, schema: string): Promise<void> {
  await sql.unsafe(`create schema if not exists "${schema}"`);
  await sql.unsafe(`revoke all on schema "${schema}" from public`);
  await sql.unsafe(kitTablesDdl(schema));
  await ensureKitIndexes(sql, schema);
}

async function migrationFiles(dir: string): Promise<string[]> {
  try {
    return (await readdir(dir)).filter((f) => f.endsWith(".sql")).sort();
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw e;
  }
}

/** Applies each pending file once, in filename order, each in its own transaction with the schema on the path. */
async function applyMigrations(sql: Sql, schema: string, dir: string, log: (m: string) => void): Promise<void> {
  const applied = new Set((await sql.unsafe<{ version: string }[]>(`select version from "${schema}".schema_migrations`)).map((r) => r.version));
  for (const file of await migrationFiles(dir)) {
    if (applied.has(file)) continue;
    const text = await readFile(join(dir, file), "utf8");
    await sql.begin(async (tx) => {
      await tx.unsafe(`set local search_path to "${schema}"`);
      await tx.unsafe(text);
      await tx.unsafe(`insert into "${schema}".schema_migrations (version) values ($1)`, [file]);
    });
    log(`${schema}: applied ${file}`);
  }
}

/**
 * Creates each service's role and schema, the kit tables, applies the service's migrations and grants the
 * schema to that service's role only: "only the ledger writes entries" is enforced by the database.
 */
export async function migrateAll(opts: {
  adminUrl: string;
  rootDir: string;
  services: readonly string[];
  log?: (m: string) => void;
  /**
   * Each service's role password, by service name, from the deployment's secrets. Roles without one get no
   * password (trust authentication in development; CloudNativePG manages the roles' passwords in Kubernetes).
   * Given passwords are also set on roles that exist already (a rotation, or a role of an earlier start).
   */
  rolePasswords?: Readonly<Record<string, string>>;
}): Promise<void> {
  const bad = opts.services.filter((s) => !SERVICE_NAME_RE.test(s));
  if (bad.length > 0) throw new Error(`invalid service names: ${bad.join(", ")}`);
  const log = opts.log ?? (() => {});
  // One connection, so the session advisory lock and every statement share it.
  const sql = postgres(opts.adminUrl, { max: 1, onnotice: () => {}, connection: { application_name: "migrate" } });
  try {
    await sql`select pg_advisory_lock(hashtext(${MIGRATE_LOCK_KEY}))`;
    for (const name of opts.services) {
      const role = `${name}_svc`;
      await ensureRole(sql, role, opts.rolePasswords?.[name]);
      await ensureSchema(sql, name);
      await applyMigrations(sql, name, join(opts.rootDir, "services", name, "migrations"), log);
      await sql.unsafe(grantsDdl(name, role));
    }
    await sql`select pg_advisory_unlock(hashtext(${MIGRATE_LOCK_KEY}))`;
  } finally {
    await sql.end({ timeout: 5 });
  }
}
