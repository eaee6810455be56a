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
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Date | null;
  secret_rotated_at: Date | null;
  created_at: Date;
}

type Db = Sql | Tx;

const COLUMNS = "id, org_id, livemode, url, description, events, is_active, secret, previous_secret, previous_secret_expires_at, secret_rotated_at, created_at";

export async function insertEndpoint(
  db: Db,
  s: Scope,
  e: { id: string; url: string; description: string | null; events: string[]; secret: string },
): Promise<EndpointRow> {
  const [row] = await db<EndpointRow[]>`
    insert into webhooks.endpoints (id, org_id, livemode, url, description, events, secret)
    values (${e.id}, ${s.orgId}, ${s.livemode}, ${e.url}, ${e.description}, ${e.events}, ${e.secret})
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

export async function rotateSecret(db: Db, s: Scope, id: string, secret: string, overlapMs: number): Promise<EndpointRow | undefined> {
  const [row] = await db<EndpointRow[]>`
    update webhooks.endpoints set
      previous_secret = secret,
      previous_secret_expires_at = now() + make_interval(secs => ${overlapMs / 1000}),
      secret = ${secret},
      secret_rotated_at = now(),
      updated_at = now()
    where id = ${id} and org_id = ${s.orgId} and livemode = ${s.livemode} and deleted_at is null
    returning ${db.unsafe(COLUMNS)}`;
  return row;
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

/** The secrets that sign now: the current one, and the previous one while its overlap lasts. */
export function signingSecrets(e: Pick<EndpointRow, "secret" | "previous_secret" | "previous_secret_expires_at">, now: Date): string[] {
  const out = [e.secret];
  if (e.previous_secret !== null && e.previous_secret_expires_at !== null && e.previous_secret_expires_at > now) out.push(e.previous_secret);
  return out;
}
