// Proves a weekly payout schedule run survives kill -9 part way through: 200 creators funded by sales come due
// with one sandbox clock advance, the payouts process is killed while its run has paid some but not all of them,
// a new process starts and an operator's `admin payouts run-schedules` races its own pass; in the end every creator
// is paid exactly once for the period, its whole payable balance (reserves kept back), each period recorded as
// paid and none reported skipped, and the ledger's invariants hold.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, spawnService, waitFor, type SpawnedService } from "@treasury/testing";
import { checkInvariants } from "../../services/ledger/src/verify/invariants.ts";
import { admin, apiOf, startPayoutsStack, type Api, type PayoutsStack } from "./payouts-stack.ts";

type Body = Record<string, unknown>;
let p: PayoutsStack;
let api: Api;
const children: SpawnedService[] = [];

const CREATORS = 200;
const DAY = 86_400;
/** Every RESERVE_EVERY-th creator has a 10 % rolling reserve on a second sale, so payable < balance there. */
const RESERVE_EVERY = 10;
const RESERVED_SALE = 5_000;
const WEEKDAYS = ["sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"] as const;

/**
 * Small batches keep the run long enough to be caught in the middle; a short lease lets the restarted process and
 * the operator's run take back what the killed one had claimed within the test's deadline.
 */
const SCHEDULE_ENV = { PAYOUTS_SCHEDULE_BATCH_MAX: "5", PAYOUTS_SCHEDULE_LEASE_MS: "3000" };

beforeAll(async () => {
  p = await startPayoutsStack({ buildPayouts: false });
  api = apiOf(p);
  const lifted = { capacity: 1e9, refill_per_sec: 1e9 };
  await p.env
    .adminSql`update gateway.orgs set rate_limits = ${p.env.adminSql.json({ read: lifted, write: lifted, treasury_write: lifted, record_sale: lifted })}
    where id = ${p.s.orgId}`;
}, 120_000);
afterAll(async () => {
  for (const c of children) c.kill("SIGKILL");
  await Promise.all(children.map((c) => c.exited));
  await p?.stop();
});

async function startPayouts(extra: Record<string, string>): Promise<SpawnedService> {
  const child = spawnService("payouts", p.payoutsEnv({ HEALTH_PORT: String(await freePort()), LOG_LEVEL: "warn", ...SCHEDULE_ENV, ...extra }));
  children.push(child);
  await child.ready;
  return child;
}

async function ok(method: string, path: string, body: unknown, status: number[] = [200]): Promise<Body> {
  const r = await api(method, path, p.s.testKey, body);
  expect(status, `${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`).toContain(r.status);
  return r.body;
}

/** `count` operations `op(i)`, `concurrency` at a time. */
async function each(count: number, concurrency: number, op: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) await op(next++);
    }),
  );
}

/**
 * Each creator's sales, reserve and weekly schedule; answers what each may be paid: the first sale's creator
 * share, plus, for a reserved creator, a second sale's share less the 10 % the reserve holds past the run.
 */
async function fundAndSchedule(tag: string, anchor: string): Promise<Map<string, number>> {
  const expected = new Map<string, number>();
  await each(CREATORS, 8, async (i) => {
    const pid = `sched_${tag}_${String(i).padStart(3, "0")}`;
    const first = 1_000 + 37 * i;
    await ok("POST", "/v1/record-sale", { reference_id: `sale1_${pid}`, creator_id: pid, amount: first, creator_percent: 100 }, [201]);
    let payable = first;
    if (i % RESERVE_EVERY === 0) {
      await ok("PUT", `/v1/participants/${pid}/reserve`, { type: "rolling", percent: 10, days: 30 });
      await ok("POST", "/v1/record-sale", { reference_id: `sale2_${pid}`, creator_id: pid, amount: RESERVED_SALE, creator_percent: 100 }, [201]);
      payable += RESERVED_SALE - RESERVED_SALE / 10;
    }
    await ok("PUT", `/v1/participants/${pid}/payout-schedule`, { interval: "weekly", weekly_anchor: anchor });
    expected.set(pid, payable);
  });
  return expected;
}

interface PaidRow {
  id: string;
  participant_id: string;
  reference_id: string;
  amount: string;
  status: string;
}

/** The org's scheduled payouts as stored (a refused request moved nothing and is left out). */
const scheduledPayouts = () =>
  p.env.adminSql<PaidRow[]>`
    select id, participant_id, reference_id, amount::text, status from payouts.payouts
     where org_id = ${p.s.orgId} and reference_id like 'schedule:%' and status <> 'refused'`;

describe("a scheduled payout run killed -9 part way", () => {
  it("pays every creator once, its whole payable balance, after a restart raced by the operator's run", { timeout: 300_000 }, async () => {
    // Only a clock advance starts the first process's run: the moment it is caught in is the one the test chose.
    const first = await startPayouts({ PAYOUTS_SCHEDULE_INTERVAL_MS: "0", PAYOUTS_RECONCILE_INTERVAL_MS: "600000" });
    const now = new Date(String(((await ok("GET", "/v1/sandbox/clock", undefined))["clock"] as Body)["now"]));
    const anchor = WEEKDAYS[(now.getUTCDay() + 1) % 7] as string;
    const expected = await fundAndSchedule(Date.now().toString(36), anchor);
    for (const [pid, amount] of [...expected].filter((_, i) => i % 50 === 0)) {
      expect((await ok("GET", `/v1/participants/${pid}`, undefined))["participant"]).toMatchObject({ payable_balance_cents: amount });
    }

    await ok("POST", "/v1/sandbox/clock/advance", { by_seconds: 2 * DAY });
    await waitFor(async () => (await scheduledPayouts()).length >= 10, { timeoutMs: 60_000, intervalMs: 10 });
    first.kill("SIGKILL");
    expect((await first.exited).signal).toBe("SIGKILL");
    const atKill = (await scheduledPayouts()).length;
    expect(atKill, "the run was caught before it paid everyone").toBeLessThan(CREATORS);

    const second = await startPayouts({ PAYOUTS_SCHEDULE_INTERVAL_MS: "200", PAYOUTS_RECONCILE_INTERVAL_MS: "200", PAYOUTS_RECONCILE_GRACE_MS: "1000" });
    const operator = await admin(p, "payouts", "run-schedules", "--reason", "catch up after a crash");
    expect(operator.code, JSON.stringify(operator.err)).toBe(0);
    expect(operator.out).toMatchObject({ runs: expect.any(Number), paid: expect.any(Number), skipped: expect.any(Number) });

    await waitFor(
      async () => {
        const rows = await scheduledPayouts();
        return new Set(rows.map((r) => r.participant_id)).size === CREATORS && rows.every((r) => r.status === "paid");
      },
      { timeoutMs: 90_000, intervalMs: 200 },
    );
    await expectPaidOnce(expected);
    second.kill("SIGTERM");
    await second.exited;
  });
});

/** One paid payout per creator for the one period, of its payable balance, as the API, the runs and the ledger say. */
async function expectPaidOnce(expected: Map<string, number>): Promise<void> {
  const rows = await scheduledPayouts();
  expect(rows).toHaveLength(CREATORS);
  const periods = new Set(rows.map((r) => r.reference_id.split(":")[2]));
  expect(periods.size).toBe(1);
  const [period] = [...periods];
  expect(period).toMatch(/^\d{4}-W\d{2}$/);
  for (const r of rows) {
    expect([r.reference_id, Number(r.amount), r.status]).toEqual([`schedule:${r.participant_id}:${String(period)}`, expected.get(r.participant_id), "paid"]);
  }

  // Nothing moved but the scheduled payouts, once each: the ledger holds one payout transaction per payout.
  const moved = await p.env.adminSql<{ reference_id: string; amount: string }[]>`
    select reference_id, amount::text from ledger.transactions where org_id = ${p.s.orgId} and kind = 'payout'`;
  expect(moved.map((t) => t.reference_id).sort()).toEqual(rows.map((r) => `payout:${r.id}`).sort());

  // What a client sees: one payout per creator, nothing left to pay, the reserve still held.
  const pids = [...expected.keys()];
  await each(pids.length, 8, async (i) => {
    const pid = pids[i] as string;
    const listed = (await ok("GET", `/v1/payouts?participant_id=${pid}`, undefined))["payouts"] as Body[];
    expect(listed.map((x) => [x["reference_id"], x["gross_amount_cents"], x["status"]])).toEqual([
      [`schedule:${pid}:${String(period)}`, expected.get(pid), "paid"],
    ]);
    const snap = (await ok("GET", `/v1/participants/${pid}`, undefined))["participant"] as Body;
    const reserved = Number(pid.slice(-3)) % RESERVE_EVERY === 0 ? RESERVED_SALE / 10 : 0;
    expect(snap, pid).toMatchObject({ ledger_balance_cents: reserved, reserved_amount_cents: reserved, payable_balance_cents: 0 });
  });

  const report = await checkInvariants(p.env.adminSql, { orgId: p.s.orgId });
  expect(report.violations).toEqual([]);

  // Each period recorded as paid by its payout, and no period reported as skipped (a paid one least of all).
  const runs = await p.env.adminSql<{ participant_id: string; outcome: string; payout_id: string | null; reason: string | null }[]>`
    select participant_id, outcome, payout_id, reason from payouts.payout_schedule_runs where org_id = ${p.s.orgId} and period = ${String(period)}`;
  const byParticipant = new Map(rows.map((r) => [r.participant_id, r.id]));
  expect(runs.map((r) => [r.participant_id, r.outcome, r.payout_id, r.reason]).sort()).toEqual(
    [...byParticipant].map(([pid, id]) => [pid, "paid", id, null]).sort(),
  );
  const skipped = await p.env.adminSql<{ data: unknown }[]>`
    select payload->'data' as data from payouts.outbox where type = 'payout.skipped' and org_id = ${p.s.orgId}`;
  expect(skipped.map((s) => s.data)).toEqual([]);
}
