/** SQL for webhook endpoints. Every query filters by org and environment. */
import type { Tenant } from "@treasury/contracts";
import type { Sql, Tx } from "@treasury/service-kit";
import type { EndpointRow, EndpointSecrets, SealedSecrets } from "../domain/records.ts";
import type { EndpointPatch, NewEndpoint } from "../usecases/ports.ts";

type Db = Sql | Tx;

const COLUMNS =
  "id, org_id, livemode, url, description, events, is_active, signature_scheme, ordering, secret, previous_secret, secret_sealed, previous_secret_sealed, secret_key_id, previous_secret_expires_at, secret_rotated_at, created_at";

/** Serialises creates of one org and environment until the transaction ends, so a count check cannot be raced past. */
export async function lockEndpointCreates(tx: Tx, s: Tenant): Promise<void> {
  await tx`select pg_advisory_xact_lock(hashtext(${`webhooks.endpoints:${s.orgId}:${s.livemode}`}))`;
}

/** Endpoints of an org and environment that are not deleted. */
export async function countEndpoints(db: Db, s: Tenant): Promise<number> {
  const [count] = await db<{ n: number }[]>`
    select count(*)::int as n from webhooks.endpoints where org_id = ${s.orgId} and livemode = ${s.livemode} and deleted_at is null`;
  return count?.n ?? 0;
}

export async function insertEndpoint(db: Db, s: Tenant, e: NewEndpoint): Promise<EndpointRow> {
  const [row] = await db<EndpointRow[]>`
    insert into webhooks.endpoints (id, org_id, livemode, url, description, events, signature_scheme, ordering, secret_sealed, secret_key_id)
    values (${e.id}, ${s.orgId}, ${s.livemode}, ${e.url}, ${e.description}, ${e.events}, ${e.signature_scheme}, ${e.ordering},
      ${e.sealed.secret_sealed}, ${e.sealed.secret_key_id})
    returning ${db.unsafe(COLUMNS)}`;
  if (!row) throw new Error("insertEndpoint returned no row");
  return row;
}

export async function listEndpoints(db: Db, s: Tenant, limitMax: number): Promise<EndpointRow[]> {
  return db<EndpointRow[]>`
    select ${db.unsafe(COLUMNS)} from webhooks.endpoints
    where org_id = ${s.orgId} and livemode = ${s.livemode} and deleted_at is null
    order by created_at desc, id limit ${limitMax}`;
}

export async function findEndpoint(db: Db, s: Tenant, id: string, opts: { forUpdate?: boolean } = {}): Promise<EndpointRow | undefined> {
  const lock = opts.forUpdate ? db.unsafe("for update") : db.unsafe("");
  const [row] = await db<EndpointRow[]>`
    select ${db.unsafe(COLUMNS)} from webhooks.endpoints
    where id = ${id} and org_id = ${s.orgId} and livemode = ${s.livemode} and deleted_at is null ${lock}`;
  return row;
}

/**
 * Changes what `patch` names. A change of ordering applies to the endpoint's unfinished deliveries too (the
 * claim reads it from each delivery), in the same statement.
 */
export async function updateEndpoint(db: Db, s: Tenant, id: string, patch: EndpointPatch): Promise<EndpointRow | undefined> {
  const [row] = await db<EndpointRow[]>`
    with updated as (
      update webhooks.endpoints set
        url = coalesce(${patch.url ?? null}, url),
        description = case when ${patch.description !== undefined} then ${patch.description ?? null} else description end,
        events = coalesce(${patch.events ?? null}::text[], events),
        is_active = coalesce(${patch.is_active ?? null}::boolean, is_active),
        signature_scheme = coalesce(${patch.signature_scheme ?? null}::text, signature_scheme),
        ordering = coalesce(${patch.ordering ?? null}::text, ordering),
        failing_since = case when ${patch.is_active === true} then null else failing_since end,
        disabled_reason = case when ${patch.is_active === true} then null else disabled_reason end,
        updated_at = now()
      where id = ${id} and org_id = ${s.orgId} and livemode = ${s.livemode} and deleted_at is null
      returning ${db.unsafe(COLUMNS)}
    ), reordered as (
      update webhooks.deliveries d set ordered = (u.ordering = 'per_endpoint')
      from updated u
      where ${patch.ordering !== undefined} and d.endpoint_id = u.id and d.status in ('pending', 'retrying')
        and d.ordered is distinct from (u.ordering = 'per_endpoint')
    )
    select * from updated`;
  return row;
}

export async function softDeleteEndpoint(db: Db, s: Tenant, id: string): Promise<boolean> {
  const rows = await db`
    update webhooks.endpoints set deleted_at = now(), is_active = false, updated_at = now()
    where id = ${id} and org_id = ${s.orgId} and livemode = ${s.livemode} and deleted_at is null
    returning id`;
  return rows.length === 1;
}

/** Stores a rotation: the new secret and the one it replaces, which signs beside it for `overlapMs`. */
export async function rotateSecret(db: Db, s: Tenant, id: string, sealed: SealedSecrets, overlapMs: number): Promise<EndpointRow | undefined> {
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
export async function matchingEndpointIds(db: Db, s: Tenant, type: string): Promise<string[]> {
  const rows = await db<{ id: string }[]>`
    select id from webhooks.endpoints
    where org_id = ${s.orgId} and livemode = ${s.livemode} and is_active and deleted_at is null
      and (events @> array['*']::text[] or events @> array[${type}]::text[])
    order by id`;
  return rows.map((r) => r.id);
}
