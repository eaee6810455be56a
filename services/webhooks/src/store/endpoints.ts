/** SQL for webhook endpoints. Every query filters by org and environment. */
import type { Sql, Tx } from "@treasury/service-kit";

export interface Scope {
  orgId: string;
  livemode: boolean;
}

export interface EndpointRow {
  id: string;
  org_id: string;
  livemode: boolean;
  url: string;
  description: string | null;
  events: string[];
  is_active: boolean;
  /** Clear secrets: only on rows written before secrets were sealed, until the reseal pass seals them. */
  secret: string | null;
  previous_secret: string | null;
  /** The secrets sealed with the key `secret_key_id` names (usecases/secrets.ts). */
  secret_sealed: string | null;
  previous_secret_sealed: string | null;
  secret_key_id: string | null;
  previous_secret_expires_at: Date | null;
  secret_rotated_at: Date | null;
  created_at: Date;
}

/** What signing needs of an endpoint: its secrets, sealed or (on rows not resealed yet) clear. */
export type EndpointSecrets = Pick<
  EndpointRow,
  "id" | "secret" | "previous_secret" | "secret_sealed" | "previous_secret_sealed" | "previous_secret_expires_at"
>;

/** Both secrets sealed with one key. */
export interface SealedSecrets {
  secret_sealed: string;
  previous_secret_sealed: string | null;
  secret_key_id: string;
}

type Db = Sql | Tx;

const COLUMNS =
  "id, org_id, livemode, url, description, events, is_active, secret, previous_secret, secret_sealed, previous_secret_sealed, secret_key_id, previous_secret_expires_at, secret_rotated_at, created_at";

export async function insertEndpoint(
  db: Db,
  s: Scope,
  e: { id: string; url: string; description: string | null; events: string[]; sealed: SealedSecrets },
): Promise<EndpointRow> {
  const [row] = await db<EndpointRow[]>`
    insert into webhooks.endpoints (id, org_id, livemode, url, description, events, secret_sealed, secret_key_id)
    values (${e.id}, ${s.orgId}, ${s.livemode}, ${e.url}, ${e.description}, ${e.events}, ${e.sealed.secret_sealed}, ${e.sealed.secret_key_id})
    returning ${db.unsafe(COLUMNS)}`;
  if (!row) throw new Error("insertEndpoint returned no row");
  return row;
}

export async function listEndpoints(db: Db, s: Scope, limitMax: number): Promise<EndpointRow[]> {
  return db<EndpointRow[]>`
    select ${db.unsafe(COLUMNS)} from webhooks.endpoints
    where org_id = ${s.orgId} and livemode = ${s.livemode} and deleted_at is null
    order by created_at desc, id limit ${limitMax}`;
}

export async function findEndpoint(db: Db, s: Scope, id: string, opts: { forUpdate?: boolean } = {}): Promise<EndpointRow | undefined> {
  const lock = opts.forUpdate ? db.unsafe("for update") : db.unsafe("");
  const [row] = await db<EndpointRow[]>`
    select ${db.unsafe(COLUMNS)} from webhooks.endpoints
    where id = ${id} and org_id = ${s.orgId} and livemode = ${s.livemode} and deleted_at is null ${lock}`;
  return row;
}

export async function updateEndpoint(
  db: Db,
  s: Scope,
  id: string,
  patch: { url?: string; description?: string | null; events?: string[]; is_active?: boolean },
): Promise<EndpointRow | undefined> {
  const [row] = await db<EndpointRow[]>`
    update webhooks.endpoints set
      url = coalesce(${patch.url ?? null}, url),
      description = case when ${patch.description !== undefined} then ${patch.description ?? null} else description end,
      events = coalesce(${patch.events ?? null}::text[], events),
      is_active = coalesce(${patch.is_active ?? null}::boolean, is_active),
      failing_since = case when ${patch.is_active === true} then null else failing_since end,
      disabled_reason = case when ${patch.is_active === true} then null else disabled_reason end,
      updated_at = now()
    where id = ${id} and org_id = ${s.orgId} and livemode = ${s.livemode} and deleted_at is null
    returning ${db.unsafe(COLUMNS)}`;
  return row;
}

export async function softDeleteEndpoint(db: Db, s: Scope, id: string): Promise<boolean> {
  const rows = await db`
    update webhooks.endpoints set deleted_at = now(), is_active = false, updated_at = now()
    where id = ${id} and org_id = ${s.orgId} and livemode = ${s.livemode} and deleted_at is null
    returning id`;
  return rows.length === 1;
}

/** Stores a rotation: the new secret and the one it replaces, which signs beside it for `overlapMs`. */
export async function rotateSecret(db: Db, s: Scope, id: string, sealed: SealedSecrets, overlapMs: number): Promise<EndpointRow | undefined> {
  const [row] = await db<EndpointRow[]>`
    update webhooks.endpoints set
      secret = null,
      previous_secret = null,
      secret_sealed = ${sealed.secret_sealed},
      previous_secret_sealed = ${sealed.previous_secret_sealed},
      secret_key_id = ${sealed.secret_key_id},
      previous_secret_expires_at = now() + make_interval(secs => ${overlapMs / 1000}),
      secret_rotated_at = now(),
      updated_at = now()
    where id = ${id} and org_id = ${s.orgId} and livemode = ${s.livemode} and deleted_at is null
    returning ${db.unsafe(COLUMNS)}`;
  return row;
}

/**
 * Endpoints (deleted ones too) whose secrets are still clear or sealed with one of `retiredKeyIds`, locked for
 * the reseal pass; rows another replica is resealing are skipped.
 */
export async function lockUnsealed(tx: Tx, retiredKeyIds: readonly string[], limit: number): Promise<EndpointSecrets[]> {
  return tx<EndpointSecrets[]>`
    select id, secret, previous_secret, secret_sealed, previous_secret_sealed, previous_secret_expires_at from webhooks.endpoints
    where secret is not null or previous_secret is not null or secret_key_id = any(${retiredKeyIds as string[]}::text[])
    order by id limit ${limit}
    for update skip locked`;
}

/** Stores an endpoint's secrets sealed and clears the clear columns. */
export async function storeSealed(tx: Tx, id: string, sealed: SealedSecrets): Promise<void> {
  await tx`
    update webhooks.endpoints set secret = null, previous_secret = null, secret_sealed = ${sealed.secret_sealed},
      previous_secret_sealed = ${sealed.previous_secret_sealed}, secret_key_id = ${sealed.secret_key_id}
    where id = ${id}`;
}

/** Active endpoints of an org and environment whose filter takes `type` (`*` or the exact type). */
export async function matchingEndpointIds(db: Db, s: Scope, type: string): Promise<string[]> {
  const rows = await db<{ id: string }[]>`
    select id from webhooks.endpoints
    where org_id = ${s.orgId} and livemode = ${s.livemode} and is_active and deleted_at is null
      and (events @> array['*']::text[] or events @> array[${type}]::text[])
    order by id`;
  return rows.map((r) => r.id);
}
