// Proves payout schedules on real PostgreSQL and NATS, with a stand-in ledger that keeps the wallets' books: a
// weekly schedule set over the API pays on its anchor day on the org's sandbox clock (advanced in the service's
// copy, as the ledger's event does), exactly once while two passes of the leader, a second replica and the
// operator command all run at the same moment; the payout's statement over RPC; and the operator command answers
// its counts and is audited.
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { adminOperation, newRequestId, rpcSubject, type RpcReply } from "@treasury/contracts";
import { advanceSandboxClock, rpcCall } from "@treasury/service-kit";
import { allowRisk, setupTestEnv, waitFor, type TestEnv } from "@treasury/testing";
import { startLedgerBooks, type LedgerBooks } from "../test/ledger-books.ts";
import { buildPayouts, type PayoutsService } from "./service.ts";

const ORG = "org_sched";
const CREATOR = "creator_sched";
const RPC_TIMEOUT_TEST_MS = 30_000;
const DAY_S = 86_400;

let env: TestEnv;
let svc: PayoutsService;
let replica: PayoutsService;
let ledger: LedgerBooks;
let nc: NatsConnection;

beforeAll(async () => {
  env = await setupTestEnv();
  ledger = await startLedgerBooks(env);
  // No timer passes: what runs is what the test starts (and the clock's wake-up).
  const cfg = env.env("payouts", { PAYOUTS_SCHEDULE_INTERVAL_MS: "0", PAYOUTS_RECONCILE_INTERVAL_MS: "600000" });
  svc = await buildPayouts(cfg, { risk: allowRisk });
  replica = await buildPayouts(cfg, { risk: allowRisk });
  await svc.start();
  await replica.start();
  nc = await env.nats();
});
afterAll(async () => {
  await replica?.stop();
  await svc?.stop();
  await ledger?.close();
  await env?.cleanup();
});

function body(reply: RpcReply): Record<string, unknown> {
  if (!reply.ok) throw new Error(`expected success, got ${reply.error.code}: ${reply.error.message}`);
  return reply.body;
}

/** A gateway request to payouts, as the sandbox key of ORG. */
async function call(operation: string, params: Record<string, string>, reqBody: unknown = {}): Promise<RpcReply> {
  const auth = { org_id: ORG, livemode: false, key_id: "key_test", scopes: ["payouts"], request_id: newRequestId() };
  return rpcCall(nc, rpcSubject(env.prefix, "payouts", operation), { auth, params, query: {}, body: reqBody }, { timeoutMs: RPC_TIMEOUT_TEST_MS });
}

async function admin(command: string, flags: Record<string, unknown> = {}): Promise<RpcReply> {
  const payload = { actor: "ops:alice", flags, positionals: [] };
  return rpcCall(nc, rpcSubject(env.prefix, "payouts", adminOperation(command)), payload, { timeoutMs: RPC_TIMEOUT_TEST_MS });
}

async function scheduledPayouts(): Promise<{ id: string; reference_id: string; amount: string; status: string }[]> {
  return env.adminSql`select id, reference_id, amount, status from payouts.payouts where org_id = ${ORG} and reference_id like 'schedule:%'`;
}

describe("payout schedules", () => {
  it("a weekly schedule pays on its anchor day exactly once while runs race", async () => {
    ledger.record(CREATOR, "sale", "sale_1", [4200], new Date(Date.now() - 30 * DAY_S * 1000));
    const manual = body(await call("getPayoutSchedule", { participant_id: CREATOR }));
    expect(manual["payout_schedule"]).toMatchObject({ interval: "manual", next_run_at: null });
    const set = body(await call("putPayoutSchedule", { participant_id: CREATOR }, { interval: "weekly", weekly_anchor: "wednesday" }));
    const next = new Date(String((set["payout_schedule"] as { next_run_at: string }).next_run_at));
    expect(next.getUTCDay()).toBe(3);
    expect(next.getTime()).toBeGreaterThan(Date.now());

    // The org's sandbox moves one hour past the anchor day's start, in the service's copy of the clock.
    const ahead = Math.ceil((next.getTime() - Date.now()) / 1000) + 3600;
    await advanceSandboxClock(env.adminSql, "payouts", ORG, ahead);
    const outcomes = await Promise.all([svc.scheduler.runOnce(), svc.scheduler.runOnce(), replica.scheduler.runOnce(), admin("payouts run-schedules")]);
    // The leader's pass and the clock's wake-up may pay before these: whoever paid, exactly one payout exists.
    const rows = await waitFor(async () => {
      const r = await scheduledPayouts();
      return r.length > 0 && r.every((p) => p.status === "paid") && r;
    });
    expect(rows.map((p) => [p.reference_id, Number(p.amount)])).toEqual([[`schedule:${CREATOR}:${isoWeekOf(next)}`, 4200]]);
    expect(ledger.balance(CREATOR)).toBe(0);
    expect(ledger.payoutPosts.map((p) => p.reference_id)).toEqual([`payout:${rows[0]?.id}`]);
    expect(outcomes[3]?.ok).toBe(true);
    // The run that paid (whichever it was) records the period and moves the schedule a week on.
    const weekLater = new Date(next.getTime() + 7 * DAY_S * 1000).toISOString();
    await waitFor(async () => {
      const after = body(await call("getPayoutSchedule", { participant_id: CREATOR }));
      return (after["payout_schedule"] as { next_run_at: string }).next_run_at === weekLater;
    });
    // Passes after it find nothing due and pay nothing.
    await Promise.all([svc.scheduler.runOnce(), admin("payouts run-schedules")]);
    expect(await scheduledPayouts()).toHaveLength(1);
    // Recorded before the schedule moved on.
    const runs = await env.adminSql`select period, outcome, payout_id from payouts.payout_schedule_runs where org_id = ${ORG}`;
    expect(runs).toEqual([{ period: isoWeekOf(next), outcome: "paid", payout_id: rows[0]?.id }]);
  });

  it("the scheduled payout's statement adds up, as JSON and as a CSV file", async () => {
    const [paid] = await scheduledPayouts();
    const id = String(paid?.id);
    const { statement } = body(await call("getPayoutStatement", { payout_id: id })) as {
      statement: { opening_balance_cents: number; closing_balance_cents: number; lines: { type: string; amount_cents: number }[] };
    };
    expect(statement.lines.map((l) => [l.type, l.amount_cents])).toEqual([
      ["sale", 4200],
      ["payout", -4200],
    ]);
    expect(statement.opening_balance_cents + 4200 - 4200).toBe(statement.closing_balance_cents);
    const auth = { org_id: ORG, livemode: false, key_id: "key_test", scopes: ["read"], request_id: newRequestId() };
    const csv = await rpcCall(
      nc,
      rpcSubject(env.prefix, "payouts", "getPayoutStatement"),
      {
        auth,
        params: { payout_id: id },
        query: { format: "csv" },
        body: {},
      },
      { timeoutMs: RPC_TIMEOUT_TEST_MS },
    );
    expect(body(csv)["file"]).toMatchObject({ content_type: "text/csv; charset=utf-8", filename: `statement-${id}.csv` });
  });

  it("the operator command runs what is due at --at and is audited with its counts", async () => {
    ledger.record("creator_low", "sale", "sale_low", [50]);
    body(await call("putPayoutSchedule", { participant_id: "creator_low" }, { interval: "daily", minimum_amount_cents: 100 }));
    // The org's sandbox runs up to a week ahead (the test above): --at is past its next daily run either way.
    const at = new Date(Date.now() + 10 * DAY_S * 1000).toISOString();
    const answer = body(await admin("payouts run-schedules", { at, reason: "catch up" }));
    expect(answer).toEqual({ runs: 1, paid: 0, skipped: 1 });
    const [skip] = await env.adminSql`select outcome, reason from payouts.payout_schedule_runs where participant_id = 'creator_low'`;
    expect(skip).toEqual({ outcome: "skipped", reason: "below_minimum" });
    const [event] = await env.adminSql<{ data: Record<string, unknown> }[]>`
      select payload->'data' as data from payouts.outbox where type = 'payout.skipped' order by created_at desc limit 1`;
    expect(event?.data).toMatchObject({ participant_id: "creator_low", reason: "below_minimum" });
    const audits = await env.adminSql`select actor, outcome, details from payouts.audit_log where action = 'payouts.run-schedules' order by id`;
    expect(audits.at(-1)).toMatchObject({ actor: "ops:alice", outcome: "succeeded", details: { at, runs: 1, paid: 0, skipped: 1 } });
    const refused = await admin("payouts run-schedules", { at: "yesterday" });
    expect(refused.ok ? "ok" : refused.error.code).toBe("validation_error");
  });
});

/** The ISO week (`YYYY-Www`) of a UTC day. */
function isoWeekOf(d: Date): string {
  const day = new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()));
  const thursday = new Date(day.getTime() + (3 - ((day.getUTCDay() + 6) % 7)) * DAY_S * 1000);
  const week = Math.floor((thursday.getTime() - Date.UTC(thursday.getUTCFullYear(), 0, 1)) / (7 * DAY_S * 1000)) + 1;
  return `${thursday.getUTCFullYear()}-W${String(week).padStart(2, "0")}`;
}
