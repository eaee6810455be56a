/** SQL for deliveries: fan-out inserts, the worker's claim and settle, and the management queries. */
import type { Sql, Tx } from "@treasury/service-kit";
import type { Tenant } from "@treasury/contracts";
import type { DeliveryRow, EndpointSecrets } from "../domain/records.ts";
import type { SignatureScheme } from "../domain/signing.ts";
import type { DeliveryFilter, FanOutCount, FanOutEvent } from "../usecases/ports.ts";

/** NOTIFY channel that wakes delivery workers when deliveries are created or made due by hand. */
export const DELIVERIES_CHANNEL = "webhooks_deliveries";

type Db = Sql | Tx;

const COLUMNS =
  "id, org_id, livemode, endpoint_id, event_id, event_type, status, attempts, max_attempts, response_status, response_body, response_time_ms, next_retry_at, lease_until, created_at, delivered_at";

/**
 * Inserts one delivery per matching active endpoint (filter `*` or the exact type) in one statement. A
 * redelivered event inserts nothing new: the (event, endpoint) key is unique. Delivery ids are `whd_` + 24
 * random lowercase hex characters, drawn in the database so the whole fan-out is one round trip. Each row's body
 * names its endpoint (the event's body spliced around the endpoint id) and it carries the event's stream sequence.
 * Returns how many rows were inserted, and how many of them are ordered.
 *
 * No NOTIFY here: PostgreSQL serialises the commits of every transaction that notifies (a database-wide lock
 * held through the commit's WAL flush), which capped fan-out at one commit per flush. The caller hints its
 * own workers instead, and they notify the other replicas outside any business transaction.
 */
export async function fanOutDeliveries(tx: Tx, s: Tenant, evt: FanOutEvent, maxAttempts: number): Promise<FanOutCount> {
  const [row] = await tx<FanOutCount[]>`
    with matching as (
      select id, ordering from webhooks.endpoints
      where org_id = ${s.orgId} and livemode = ${s.livemode} and is_active and deleted_at is null
        and (events @> array['*']::text[] or events @> array[${evt.type}]::text[])
    ), inserted as (
      insert into webhooks.deliveries (id, org_id, livemode, endpoint_id, event_id, event_type, body, status, max_attempts, trace_headers, stream_seq, ordered)
      select 'whd_' || substr(md5(gen_random_uuid()::text), 1, 24), ${s.orgId}, ${s.livemode}, m.id, ${evt.id}, ${evt.type},
        ${evt.body.before} || m.id || ${evt.body.after}, 'pending', ${maxAttempts}, ${tx.json(evt.traceHeaders)}, ${evt.streamSeq},
        m.ordering = 'per_endpoint'
      from matching m
      on conflict (event_id, endpoint_id) do nothing
      returning ordered
    )
    select count(*)::int as inserted, (count(*) filter (where ordered))::int as ordered from inserted`;
  return row ?? { inserted: 0, ordered: 0 };
}

export async function listDeliveries(db: Db, s: Tenant, f: DeliveryFilter): Promise<DeliveryRow[]> {
  return db<DeliveryRow[]>`
    select ${db.unsafe(COLUMNS)} from webhooks.deliveries
    where org_id = ${s.orgId} and livemode = ${s.livemode}
      and (${f.endpointId ?? null}::text is null or endpoint_id = ${f.endpointId ?? null})
      and (${f.eventType ?? null}::text is null or event_type = ${f.eventType ?? null})
      and (${f.status ?? null}::text is null or status = ${f.status ?? null})
    order by created_at desc, id desc limit ${f.limit}`;
}

export async function findDelivery(db: Db, s: Tenant, id: string, opts: { forUpdate?: boolean } = {}): Promise<DeliveryRow | undefined> {
  const lock = opts.forUpdate ? db.unsafe("for update") : db.unsafe("");
  const [row] = await db<DeliveryRow[]>`
    select ${db.unsafe(COLUMNS)} from webhooks.deliveries
    where id = ${id} and org_id = ${s.orgId} and livemode = ${s.livemode} ${lock}`;
  return row;
}

/** Whose a delivery is, by its id alone (an operator names only the id), and what it was sent for. */
export async function deliveryOwner(db: Db, id: string): Promise<{ org_id: string; livemode: boolean; event_id: string; endpoint_id: string } | undefined> {
  const [row] = await db<{ org_id: string; livemode: boolean; event_id: string; endpoint_id: string }[]>`
    select org_id, livemode, event_id, endpoint_id from webhooks.deliveries where id = ${id}`;
  return row;
}

/**
 * Makes a finished (or waiting) delivery due now for `extraAttempts` more attempts, reusing its id and body.
 * Notifies the workers at commit.
 */
export async function makeDueNow(tx: Tx, s: Tenant, id: string, extraAttempts: number): Promise<DeliveryRow | undefined> {
  const [row] = await tx<DeliveryRow[]>`
    update webhooks.deliveries set
      status = case when status in ('delivered', 'failed') then 'retrying' else status end,
      max_attempts = greatest(max_attempts, attempts + ${extraAttempts}),
      next_retry_at = now(), updated_at = now()
    where id = ${id} and org_id = ${s.orgId} and livemode = ${s.livemode}
    returning ${tx.unsafe(COLUMNS)}`;
  if (row) await tx`select pg_notify(${DELIVERIES_CHANNEL}, '')`;
  return row;
}

/** Every failed delivery of an endpoint created since `since`, due again now with one more attempt each. */
export async function replayFailedSince(tx: Tx, s: Tenant, endpointId: string, since: Date, limitMax: number): Promise<string[]> {
  const rows = await tx<{ id: string }[]>`
    update webhooks.deliveries d set
      status = 'retrying', max_attempts = d.attempts + 1, next_retry_at = now(), updated_at = now()
    where d.id in (
      select id from webhooks.deliveries
      where org_id = ${s.orgId} and livemode = ${s.livemode} and endpoint_id = ${endpointId}
        and status = 'failed' and created_at >= ${since}
      order by created_at limit ${limitMax} for update)
    returning d.id`;
  if (rows.length > 0) await tx`select pg_notify(${DELIVERIES_CHANNEL}, '')`;
  return rows.map((r) => r.id);
}

// ---- the delivery worker ----
// The worker's statements run on a pool whose sessions commit without waiting for the WAL flush
// (synchronous_commit off): a claim or an outcome lost to a database crash only means that delivery is sent
// once more, which at-least-once delivery (receivers de-duplicate on webhook-id) already allows. Delivery rows
// themselves are created by the fan-out consumer with durable commits, before the event is acked.

export interface ClaimedDelivery {
  id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  livemode: boolean;
  body: string;
  attempts: number;
  max_attempts: number;
  /** The event's request id and trace context (fan-out), which each attempt's request continues. */
  trace_headers: Record<string, string>;
  /** Its endpoint takes deliveries one at a time, in order: settling it makes the next one due. */
  ordered: boolean;
  endpoint: EndpointSecrets & { url: string; signature_scheme: SignatureScheme };
}

interface ClaimedRow extends Omit<ClaimedDelivery, "endpoint"> {
  url: string;
  signature_scheme: SignatureScheme;
  secret: string | null;
  previous_secret: string | null;
  secret_sealed: string | null;
  previous_secret_sealed: string | null;
  previous_secret_expires_at: Date | null;
  endpoint_usable: boolean;
}

/**
 * Claims up to `limit` due deliveries in one statement: FOR UPDATE SKIP LOCKED (replicas never take the same
 * row), at most `free(endpoint)` per endpoint (`busy` lists the endpoints with attempts in flight here and
 * how many slots each has left; others get `endpointMax`). A claimed row's attempt counter is bumped and its
 * `next_retry_at` moved to the end of a lease: if this process dies mid-attempt, the row comes due again when
 * the lease ends. Deliveries of disabled or deleted endpoints are failed instead of sent.
 *
 * An ordered delivery is due only when it is its endpoint's oldest unfinished delivery (by stream sequence), and
 * only once every event up to its own has been fanned out (`fannedOutThrough`, the fan-out's ack floor): an
 * earlier event whose rows are not committed yet cannot be overtaken. Its own lease keeps it unfinished, so one
 * attempt of an ordered endpoint is in flight at a time, across every replica. Ordered deliveries are found by
 * their endpoints' heads (one index probe per ordered endpoint), never by the scan of due rows, so the backlog
 * of an ordered endpoint that is failing costs the claim nothing.
 * No network call happens inside: attempts start after the statement returns.
 */
export async function claimDue(
  sql: Sql,
  opts: { limit: number; busy: ReadonlyMap<string, number>; endpointMax: number; leaseMs: number; fannedOutThrough: number },
): Promise<ClaimedDelivery[]> {
  const busyIds = [...opts.busy.keys()];
  const busyFree = busyIds.map((id) => Math.max(0, opts.busy.get(id) ?? 0));
  // Endpoints at their limit are left out of the scan, so their backlog cannot crowd out other endpoints.
  const saturated = busyIds.filter((_id, i) => busyFree[i] === 0);
  const rows = await sql<ClaimedRow[]>`
    with unordered as (
      select d.id, d.endpoint_id, d.next_retry_at from webhooks.deliveries d
      where d.status in ('pending', 'retrying') and not d.ordered and d.next_retry_at <= now()
        and not (d.endpoint_id = any(${saturated}::text[]))
      order by d.next_retry_at limit ${opts.limit * 4}
      for update skip locked
    ), heads as (
      select h.id from webhooks.endpoints e
      cross join lateral (
        select o.id, o.next_retry_at, o.stream_seq from webhooks.deliveries o
        where o.endpoint_id = e.id and o.ordered and o.status in ('pending', 'retrying')
        order by o.stream_seq nulls first limit 1) h
      where e.ordering = 'per_endpoint' and h.next_retry_at <= now() and coalesce(h.stream_seq, 0) <= ${opts.fannedOutThrough}
    ), ordered as (
      -- Locked only once known to be the head: skipping a locked head would take the one behind it.
      select d.id, d.endpoint_id, d.next_retry_at from webhooks.deliveries d
      where d.id in (select id from heads) and d.status in ('pending', 'retrying') and d.next_retry_at <= now()
      for update skip locked
    ), candidates as (
      select * from unordered union all select * from ordered
    ), free as (
      select * from unnest(${busyIds}::text[], ${busyFree}::int[]) as f(endpoint_id, slots)
    ), ranked as (
      select c.id, c.next_retry_at, coalesce(f.slots, ${opts.endpointMax}::int) as slots,
             row_number() over (partition by c.endpoint_id order by c.next_retry_at, c.id) as rn
      from candidates c left join free f using (endpoint_id)
    ), chosen as (
      select id from ranked where rn <= slots order by next_retry_at, id limit ${opts.limit}
    )
    update webhooks.deliveries d set
      attempts = d.attempts + 1,
      next_retry_at = now() + make_interval(secs => ${opts.leaseMs / 1000}),
      lease_until = now() + make_interval(secs => ${opts.leaseMs / 1000}),
      updated_at = now()
    from chosen, webhooks.endpoints e
    where d.id = chosen.id and e.id = d.endpoint_id
    returning d.id, d.endpoint_id, d.event_id, d.event_type, d.livemode, d.body, d.attempts, d.max_attempts, d.trace_headers, d.ordered,
      e.url, e.signature_scheme, e.secret, e.previous_secret, e.secret_sealed, e.previous_secret_sealed, e.previous_secret_expires_at,
      (e.is_active and e.deleted_at is null) as endpoint_usable`;
  const unusable = rows.filter((r) => !r.endpoint_usable).map((r) => r.id);
  if (unusable.length > 0) await failUnusable(sql, unusable);
  return rows.filter((r) => r.endpoint_usable).map(claimedOf);
}

/** Deliveries of disabled or deleted endpoints: failed without a request, so the counter bump is undone. */
async function failUnusable(sql: Sql, ids: readonly string[]): Promise<void> {
  await sql`
    update webhooks.deliveries set status = 'failed', attempts = attempts - 1, next_retry_at = null, lease_until = null,
      updated_at = now()
    where id in ${sql(ids)}`;
}

function claimedOf(r: ClaimedRow): ClaimedDelivery {
  return {
    id: r.id,
    endpoint_id: r.endpoint_id,
    event_id: r.event_id,
    event_type: r.event_type,
    livemode: r.livemode,
    body: r.body,
    attempts: r.attempts,
    max_attempts: r.max_attempts,
    trace_headers: r.trace_headers,
    ordered: r.ordered,
    endpoint: {
      id: r.endpoint_id,
      url: r.url,
      signature_scheme: r.signature_scheme,
      secret: r.secret,
      previous_secret: r.previous_secret,
      secret_sealed: r.secret_sealed,
      previous_secret_sealed: r.previous_secret_sealed,
      previous_secret_expires_at: r.previous_secret_expires_at,
    },
  };
}

/** Hands claimed deliveries that were never attempted back: due now, attempt counter restored. */
/** Wakes every replica's workers (sent outside business transactions; see fanOutDeliveries). */
export async function notifyWorkers(sql: Sql): Promise<void> {
  await sql`select pg_notify(${DELIVERIES_CHANNEL}, '')`;
}

export async function releaseClaims(sql: Sql, items: ReadonlyArray<{ id: string; attempt: number }>): Promise<void> {
  if (items.length === 0) return;
  await sql`
    update webhooks.deliveries d set attempts = d.attempts - 1, next_retry_at = now(), lease_until = null, updated_at = now()
    from unnest(${items.map((i) => i.id)}::text[], ${items.map((i) => i.attempt)}::int[]) as r(id, attempt)
    where d.id = r.id and d.attempts = r.attempt and d.status in ('pending', 'retrying')`;
}

export interface AttemptOutcome {
  status: "delivered" | "retrying" | "failed";
  responseStatus: number | null;
  responseBody: string | null;
  responseTimeMs: number;
  error: string | null;
  /** Delay before the next attempt when status is retrying. */
  retryInMs: number | null;
  /** 410 Gone: the receiver asked us to stop; the endpoint is disabled. */
  disableEndpoint: boolean;
}

export interface SettleItem {
  id: string;
  endpointId: string;
  attempt: number;
  outcome: AttemptOutcome;
}

/** Days an endpoint may keep failing before it is disabled (docs/api.md, Webhooks). */
const FAILING_DISABLE_DAYS = 5;

/**
 * Records many attempts' outcomes in one statement, each guarded by its attempt number: a worker whose lease
 * ran out and whose delivery was claimed again cannot overwrite the newer attempt's result. Then keeps the
 * endpoints' state: a failure streak (disabled after 5 days of failures), 410 disables, and a failing endpoint
 * that succeeds again gets its waiting retries made due now (the schedule bounds the wait; a recovered
 * endpoint should not sit out hours). Returns the ids whose outcome was recorded.
 */
export async function settleAttempts(sql: Sql, items: readonly SettleItem[]): Promise<Set<string>> {
  if (items.length === 0) return new Set();
  const values = items.map((i) => [
    i.id,
    String(i.attempt),
    i.outcome.status,
    i.outcome.responseStatus === null ? null : String(i.outcome.responseStatus),
    i.outcome.responseBody,
    String(i.outcome.responseTimeMs),
    i.outcome.error,
    i.outcome.retryInMs === null ? null : String(i.outcome.retryInMs),
  ]);
  const updated = await sql<{ id: string; endpoint_id: string; status: string }[]>`
    update webhooks.deliveries d set
      status = o.status,
      response_status = o.response_status::int,
      response_body = o.response_body,
      response_time_ms = o.response_time_ms::int,
      last_error = o.last_error,
      next_retry_at = case when o.status = 'retrying' then now() + make_interval(secs => o.retry_ms::float8 / 1000) end,
      lease_until = null,
      delivered_at = case when o.status = 'delivered' then now() end,
      updated_at = now()
    from (values ${sql(values as unknown as string[][])}) as o (id, attempt, status, response_status, response_body, response_time_ms, last_error, retry_ms)
    where d.id = o.id and d.attempts = o.attempt::int and d.status in ('pending', 'retrying')
    returning d.id, d.endpoint_id, d.status`;
  const recorded = new Set(updated.map((r) => r.id));
  const byId = new Map(items.map((i) => [i.id, i]));
  const succeeded = new Set<string>();
  const failing = new Set<string>();
  const gone = new Set<string>();
  for (const r of updated) {
    const o = byId.get(r.id)?.outcome;
    if (!o) continue;
    if (o.status === "delivered") succeeded.add(r.endpoint_id);
    else if (o.disableEndpoint) gone.add(r.endpoint_id);
    else failing.add(r.endpoint_id);
  }
  if (gone.size > 0) {
    await sql`update webhooks.endpoints set is_active = false, disabled_reason = 'gone', updated_at = now() where id in ${sql([...gone])}`;
  }
  const stillFailing = [...failing].filter((id) => !succeeded.has(id) && !gone.has(id));
  if (stillFailing.length > 0) {
    await sql`
      update webhooks.endpoints set
        failing_since = coalesce(failing_since, now()),
        is_active = case when failing_since < now() - make_interval(days => ${FAILING_DISABLE_DAYS}) then false else is_active end,
        disabled_reason = case when failing_since < now() - make_interval(days => ${FAILING_DISABLE_DAYS}) then 'failing' else disabled_reason end
      where id in ${sql(stillFailing)}`;
  }
  if (succeeded.size > 0) {
    const recovered = await sql<{ id: string }[]>`
      update webhooks.endpoints set failing_since = null
      where id in ${sql([...succeeded])} and failing_since is not null returning id`;
    if (recovered.length > 0) {
      const due = await sql`
        update webhooks.deliveries set next_retry_at = now(), updated_at = now()
        where endpoint_id in ${sql(recovered.map((r) => r.id))} and status = 'retrying' and lease_until is null and next_retry_at > now()
        returning id`;
      if (due.length > 0) await sql`select pg_notify(${DELIVERIES_CHANNEL}, '')`;
    }
  }
  return recorded;
}

/** Deliveries not finished yet, by status, and how late the oldest due one is (0 when none is due). */
export async function deliveryBacklog(sql: Sql): Promise<{ pending: number; retrying: number; lagSeconds: number }> {
  const [row] = await sql<{ pending: number; retrying: number; lag: number | null }[]>`
    select count(*) filter (where status = 'pending')::int as pending,
           count(*) filter (where status = 'retrying')::int as retrying,
           extract(epoch from now() - min(next_retry_at) filter (where next_retry_at <= now()))::float8 as lag
      from webhooks.deliveries where status in ('pending', 'retrying')`;
  return { pending: row?.pending ?? 0, retrying: row?.retrying ?? 0, lagSeconds: Math.max(0, row?.lag ?? 0) };
}

/**
 * Deletes up to `limit` finished deliveries (delivered or failed) whose last change is older than `before`;
 * answers how many went. Rows another session holds are skipped, not waited for.
 */
export async function purgeFinished(sql: Sql, before: Date, limit: number): Promise<number> {
  const rows = await sql`
    delete from webhooks.deliveries where id in (
      select id from webhooks.deliveries
       where status in ('delivered', 'failed') and updated_at < ${before}
       order by updated_at limit ${limit} for update skip locked)
    returning 1`;
  return rows.count;
}
