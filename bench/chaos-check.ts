/**
 * The end state of a fault run, read from the databases once the system is quiet: every flow the client saw
 * succeed moved money exactly once; every flow that failed, sent again with the same keys, either completes (once)
 * or is refused having moved nothing; every public event reached the loopback receiver under one delivery id; the
 * ledger's invariants hold.
 */
import type postgres from "postgres";
import { PUBLIC_EVENT_TYPES, SERVICES } from "@treasury/contracts";
import { checkInvariants } from "../services/ledger/src/verify/invariants.ts";
import type { Flow, Load } from "./chaos-load.ts";
import type { WebhookReceiver } from "./webhook-receiver.ts";

const QUIET_POLL_MS = 500;

export interface Scope {
  orgId: string;
}

/** What is still moving: intents between their steps, events not yet published or delivered. */
export async function unsettled(sql: postgres.Sql, s: Scope, receiver: WebhookReceiver): Promise<Record<string, number>> {
  const one = async (q: Promise<{ n: number }[]>) => (await q)[0]?.n ?? 0;
  const out: Record<string, number> = {
    completing_checkouts: await one(sql`select count(*)::int as n from payments.checkout_sessions where org_id = ${s.orgId} and status = 'completing'`),
    posting_payouts: await one(sql`select count(*)::int as n from payouts.payouts where org_id = ${s.orgId} and status = 'posting'`),
    pending_refunds: await one(sql`select count(*)::int as n from refunds.refunds where org_id = ${s.orgId} and status = 'pending'`),
    undelivered_webhooks: await one(sql`select count(*)::int as n from webhooks.deliveries where org_id = ${s.orgId} and status in ('pending', 'retrying')`),
    unpublished_events: 0,
    events_not_received: 0,
  };
  for (const schema of SERVICES) {
    out["unpublished_events"] =
      (out["unpublished_events"] ?? 0) + (await one(sql`select count(*)::int as n from ${sql(schema)}.outbox where published_at is null`));
  }
  const expected = await publicEvents(sql, s);
  out["events_not_received"] = expected.filter((id) => !receiver.deliveryIds.has(id)).length;
  return out;
}

/** Waits until nothing is moving (or the deadline passes); resolves with what was still moving. */
export async function waitUntilQuiet(sql: postgres.Sql, s: Scope, receiver: WebhookReceiver, timeoutMs: number): Promise<Record<string, number>> {
  const until = performance.now() + timeoutMs;
  for (;;) {
    const left = await unsettled(sql, s, receiver).catch((err: unknown) => ({ database_error: 1, [String(err)]: 1 }));
    if (Object.values(left).every((n) => n === 0) || performance.now() > until) return left;
    await new Promise((r) => setTimeout(r, QUIET_POLL_MS));
  }
}

/** Ids of the public events the org's services wrote (every service's outbox). */
async function publicEvents(sql: postgres.Sql, s: Scope): Promise<string[]> {
  const ids: string[] = [];
  for (const schema of SERVICES) {
    const rows = await sql<{ id: string }[]>`select id from ${sql(schema)}.outbox where org_id = ${s.orgId} and type = any(${[...PUBLIC_EVENT_TYPES]})`;
    ids.push(...rows.map((r) => r.id));
  }
  return ids;
}

/** How many ledger transactions a flow made (its references), and whether its own record says it is done. */
async function movementsOf(sql: postgres.Sql, s: Scope, f: Flow): Promise<{ transactions: number; done: boolean; records: number }> {
  const count = async (refs: string[]) =>
    refs.length === 0
      ? 0
      : ((
          await sql<
            { n: number }[]
          >`select count(*)::int as n from ledger.transactions where org_id = ${s.orgId} and not livemode and reference_id = any(${refs})`
        )[0]?.n ?? 0);
  if (f.kind === "checkout") {
    if (f.sessionId === undefined) {
      // The session was never seen: look it up by its creation key.
      const rows = await sql<
        { id: string }[]
      >`select id::text from payments.checkout_sessions where org_id = ${s.orgId} and idempotency_key = ${`${f.key}-create`}`;
      if (rows.length === 0) return { transactions: 0, done: false, records: 0 };
      f.sessionId = rows[0]?.id;
    }
    const rows = await sql<{ status: string }[]>`select status from payments.checkout_sessions where org_id = ${s.orgId} and id = ${f.sessionId ?? ""}`;
    return { transactions: await count([`checkout:${f.sessionId}`]), done: rows[0]?.status === "completed", records: rows.length };
  }
  if (f.kind === "refund") {
    const rows = await sql<
      { status: string; ledger_reference: string }[]
    >`select status, ledger_reference from refunds.refunds where org_id = ${s.orgId} and idempotency_key = ${f.key}`;
    return { transactions: await count(rows.map((r) => r.ledger_reference)), done: rows.length === 1 && rows[0]?.status === "completed", records: rows.length };
  }
  const rows = await sql<
    { status: string; ledger_reference: string }[]
  >`select status, ledger_reference from payouts.payouts where org_id = ${s.orgId} and reference_id = ${f.key} and status <> 'refused'`;
  return { transactions: await count(rows.map((r) => r.ledger_reference)), done: rows.length === 1 && rows[0]?.status === "paid", records: rows.length };
}

export interface EndState {
  flows: { total: number; ok: number; refused: number; failed: number };
  /** Flows the client saw succeed with no movement in the ledger, or not done by their own record. */
  lost: number;
  /** Flows with more than one movement (or record) for one key. */
  doubled: number;
  /** Failed flows sent again with the same keys: completed (once), refused with nothing moved, or still failing. */
  retried: { completed: number; refusedClean: number; stillFailing: number; broken: number };
  /** Refused flows that moved money anyway. */
  refusedButMoved: number;
  /** Every ledger reference with more than one transaction, in the org. */
  duplicateReferences: number;
  webhooks: { expected: number; delivered: number; missing: number; unstableIds: number; badSignatures: number; received: number };
  invariants: { ok: boolean; violations: number; first: unknown[] };
  examples: string[];
}

/**
 * Checks every flow of the load. Failed ones are run again first (the run's client retrying with the same keys
 * once the system is healthy), so call this after waitUntilQuiet().
 */
export async function checkEndState(sql: postgres.Sql, s: Scope, load: Load, receiver: WebhookReceiver): Promise<EndState> {
  const examples: string[] = [];
  const note = (msg: string) => void (examples.length < 10 && examples.push(msg));
  const flows = { total: load.flows.length, ok: 0, refused: 0, failed: 0 };
  for (const f of load.flows) flows[f.state === "ok" ? "ok" : f.state === "refused" ? "refused" : "failed"] += 1;

  const retried = { completed: 0, refusedClean: 0, stillFailing: 0, broken: 0 };
  for (const f of load.flows.filter((x) => x.state === "failed" || x.state === "running")) {
    await load.runFlow(f);
    const m = await movementsOf(sql, s, f);
    if (f.state === "ok" && m.transactions === 1 && m.done) retried.completed += 1;
    else if (f.state === "refused" && m.transactions === 0) retried.refusedClean += 1;
    else if (f.state === "failed") retried.stillFailing += 1;
    else {
      retried.broken += 1;
      note(`retried ${f.kind} ${f.key}: ${f.state} (${f.lastStatus} ${f.lastCode ?? ""}) with ${m.transactions} ledger transactions, done=${m.done}`);
    }
  }

  let lost = 0;
  let doubled = 0;
  let refusedButMoved = 0;
  for (const f of load.flows) {
    const m = await movementsOf(sql, s, f);
    if (m.transactions > 1 || m.records > 1) {
      doubled += 1;
      note(`${f.kind} ${f.key}: ${m.transactions} ledger transactions, ${m.records} records`);
    }
    if (f.state === "ok" && (m.transactions === 0 || !m.done)) {
      lost += 1;
      note(`${f.kind} ${f.key} succeeded for the client but has ${m.transactions} ledger transactions, done=${m.done}`);
    }
    if (f.state === "refused" && m.transactions > 0) {
      refusedButMoved += 1;
      note(`${f.kind} ${f.key} refused (${f.lastStatus} ${f.lastCode ?? ""}) but moved money`);
    }
  }

  const [dup] = await sql<{ n: number }[]>`
    select count(*)::int as n from (select reference_id from ledger.transactions where org_id = ${s.orgId} group by reference_id, livemode having count(*) > 1) d`;

  const expected = await publicEvents(sql, s);
  const delivered = expected.filter((id) => receiver.deliveryIds.has(id)).length;
  const unstableIds = [...receiver.deliveryIds.values()].filter((ids) => ids.size > 1).length;

  const report = await checkInvariants(sql);
  return {
    flows,
    lost,
    doubled,
    retried,
    refusedButMoved,
    duplicateReferences: dup?.n ?? 0,
    webhooks: {
      expected: expected.length,
      delivered,
      missing: expected.length - delivered,
      unstableIds,
      badSignatures: receiver.badSignatures,
      received: receiver.received,
    },
    invariants: { ok: report.ok, violations: report.violations.length, first: report.violations.slice(0, 3) },
    examples,
  };
}
