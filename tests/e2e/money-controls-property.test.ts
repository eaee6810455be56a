// Proves the money controls keep their promises under random use, through the gateway against every service as it
// runs: sequences of sales (with and without a rolling reserve), refunds (also after a payout, leaving the balance
// negative), manual holds and their release, sandbox clock advances and payouts (manual, and daily scheduled ones
// run by the advances). A manual payout is paid exactly when it is no more than the payable balance read just
// before it; a scheduled one is the whole payable balance at its run and never more (reserves released by the same
// advance may count); none is paid from a zero or negative balance. After each sequence every payout's statement
// adds up to the cent (opening + lines = closing, its own line last, each opening the previous closing) and the
// ledger's invariants hold. Runs are bounded and seeded: MONEY_PROPERTY_SEED and MONEY_PROPERTY_RUNS replay or
// widen them.
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateKeyRingEntry } from "@treasury/service-kit";
import { waitFor } from "@treasury/testing";
import { createOrg } from "../../services/gateway/src/admin.ts";
import { checkInvariants } from "../../services/ledger/src/verify/invariants.ts";
import { call, startStack, type Stack } from "./stack.ts";

const SEED = Number(process.env["MONEY_PROPERTY_SEED"] ?? 20_261_128);
const RUNS = Number(process.env["MONEY_PROPERTY_RUNS"] ?? 25);
const STEPS_MAX = 12;
const SETTLE_MS = 20_000;

type Body = Record<string, unknown>;
type Step =
  | { kind: "sale"; amount: number }
  | { kind: "reserve"; percent: number; days: number }
  | { kind: "refund"; pick: number; share: number }
  | { kind: "hold"; share: number }
  | { kind: "release"; pick: number }
  | { kind: "advance"; hours: number }
  | { kind: "payout"; share: number }
  | { kind: "schedule"; daily: boolean };

const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant("sale" as const), amount: fc.integer({ min: 101, max: 20_000 }) }) },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant("reserve" as const), percent: fc.constantFrom(0, 5, 12.5, 30), days: fc.integer({ min: 1, max: 4 }) }),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("refund" as const), pick: fc.nat(), share: fc.constantFrom(0.25, 0.5, 1) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("hold" as const), share: fc.constantFrom(0.3, 1) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("release" as const), pick: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("advance" as const), hours: fc.constantFrom(6, 20, 26, 49, 100) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("payout" as const), share: fc.constantFrom(0.4, 1, 1.25) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("schedule" as const), daily: fc.boolean() }) },
);

/** What the runs exercised: the property is only as good as the cases it reached. */
const seen = { manualPaid: 0, manualRefused: 0, scheduledPaid: 0, scheduledNone: 0, reservesReleased: 0, negative: 0, statements: 0 };

let s: Stack;
beforeAll(async () => {
  s = await startStack({
    services: ["ledger", "payments", "payouts", "refunds"],
    serviceEnv: { payouts: { PII_KEYS: generateKeyRingEntry("prop1") } },
  });
  const lifted = { capacity: 1e9, refill_per_sec: 1e9 };
  await s.env
    .adminSql`update gateway.orgs set rate_limits = ${s.env.adminSql.json({ read: lifted, write: lifted, treasury_write: lifted, record_sale: lifted })}
    where id = ${s.orgId}`;
}, 120_000);
afterAll(async () => {
  await s?.stop();
});

const api = (method: string, path: string, body?: unknown) => call(s.baseUrl, method, path, { key: s.testKey, ...(body === undefined ? {} : { body }) });

async function ok(method: string, path: string, body?: unknown, status = 200): Promise<Body> {
  const r = await api(method, path, body);
  expect(r.status, `${method} ${path} ${JSON.stringify(body)}: ${JSON.stringify(r.body)}`).toBe(status);
  return r.body;
}

/** What one sequence knows of its creator: its sales, its manual holds, and the payouts it has accounted for. */
interface Run {
  pid: string;
  n: number;
  sales: { reference: string; amount: number; refunded: number }[];
  holds: string[];
  payouts: Set<string>;
  log: string[];
}

interface Snapshot {
  ledger_balance_cents: number;
  available_balance_cents: number;
  payable_balance_cents: number;
  reserved_amount_cents: number;
}

const snapshot = async (pid: string) => (await ok("GET", `/v1/participants/${pid}`))["participant"] as unknown as Snapshot;
const payoutsOf = async (pid: string) => (await ok("GET", `/v1/payouts?participant_id=${pid}&limit=100`))["payouts"] as Body[];
const activeHolds = async (pid: string) =>
  ((await ok("GET", `/v1/holds?participant_id=${pid}`))["holds"] as Body[]).filter((h) => h["release_status"] === "held");
const clockNow = async () => Date.parse(String(((await ok("GET", "/v1/sandbox/clock"))["clock"] as Body)["now"]));
const schedule = async (pid: string) => (await ok("GET", `/v1/participants/${pid}/payout-schedule`))["payout_schedule"] as Body;

async function sale(r: Run, amount: number): Promise<void> {
  const cs = (await ok("POST", "/v1/checkout-sessions", { participant_id: r.pid, amount }, 201))["checkout_session"] as Body;
  const done = await ok("POST", `/v1/sandbox/checkouts/${String(cs["id"])}/complete`, { idempotency_key: `prop-${String(cs["id"])}` });
  r.sales.push({ reference: String((done["checkout_session"] as Body)["sale_reference"]), amount, refunded: 0 });
}

/** A refund of part or all of what is left of one of the sequence's sales (the creator's part may go negative). */
async function refund(r: Run, pick: number, share: number): Promise<void> {
  const open = r.sales.filter((x) => x.refunded < x.amount);
  const target = open[pick % Math.max(1, open.length)];
  if (target === undefined) return;
  const amount = Math.max(1, Math.floor((target.amount - target.refunded) * share));
  await ok("POST", "/v1/refunds", { sale_reference: target.reference, amount, reason: "property", idempotency_key: `prop-rf-${r.pid}-${r.n}` }, 201);
  target.refunded += amount;
}

async function hold(r: Run, share: number): Promise<void> {
  const available = (await snapshot(r.pid)).available_balance_cents;
  const amount = Math.floor(available * share);
  if (amount < 1) return;
  const created = await ok("POST", "/v1/holds", { participant_id: r.pid, amount, reference_id: `prop-hold-${r.pid}-${r.n}` }, 201);
  r.holds.push(String((created["hold"] as Body)["id"]));
}

async function release(r: Run, pick: number): Promise<void> {
  const id = r.holds.splice(pick % Math.max(1, r.holds.length), 1)[0];
  if (id !== undefined) await ok("POST", `/v1/holds/${id}/release`, {});
}

/** A manual payout of `share` of the payable balance read just before: paid exactly when it is no more than that. */
async function payout(r: Run, share: number): Promise<void> {
  const payable = (await snapshot(r.pid)).payable_balance_cents;
  const amount = Math.max(1, Math.round(payable * share));
  const res = await api("POST", "/v1/payouts", { participant_id: r.pid, amount, reference_id: `prop-po-${r.pid}-${r.n}` });
  r.log.push(`  payout of ${amount} with payable ${payable}: ${res.status} ${String(res.body["error_code"] ?? "")}`);
  if (amount > payable) {
    expect([res.status, res.body["error_code"]], `payout of ${amount} above payable ${payable}`).toEqual([422, "insufficient_balance"]);
    seen.manualRefused++;
    return;
  }
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  const paid = res.body["payout"] as Body;
  expect(paid).toMatchObject({ gross_amount_cents: amount, status: "paid" });
  r.payouts.add(String(paid["id"]));
  seen.manualPaid++;
}

/**
 * Moves the org's clock, waits until what became due has run (the creator's auto-release holds released, its
 * daily schedule moved past now), and checks a scheduled payout the move made: the whole payable balance before
 * it, plus at most the reserves the move released, and none when that is nothing.
 */
async function advance(r: Run, hours: number): Promise<void> {
  const before = await snapshot(r.pid);
  const holds = await activeHolds(r.pid);
  const sched = await schedule(r.pid);
  const now = Date.parse(String(((await ok("POST", "/v1/sandbox/clock/advance", { by_seconds: hours * 3_600 }))["clock"] as Body)["now"]));
  const due = holds.filter((h) => h["auto_release"] === true && Date.parse(String(h["hold_until"])) <= now);
  const released = due.filter((h) => h["hold_reason_code"] === "reserve").reduce((sum, h) => sum + Number(h["amount"]), 0);
  const dueIds = new Set(due.map((h) => h["id"]));
  await waitFor(async () => (await activeHolds(r.pid)).every((h) => !dueIds.has(h["id"])), { timeoutMs: SETTLE_MS });
  const nextRun = sched["next_run_at"] === null ? undefined : Date.parse(String(sched["next_run_at"]));
  if (nextRun !== undefined && nextRun <= now) {
    await waitFor(async () => Date.parse(String((await schedule(r.pid))["next_run_at"])) > now, { timeoutMs: SETTLE_MS });
  }
  const fresh = (await payoutsOf(r.pid)).filter((p) => !r.payouts.has(String(p["id"])));
  r.log.push(`  payable ${before.payable_balance_cents}, reserves released ${released}, scheduled ${fresh.map((p) => p["gross_amount_cents"]).join(",")}`);
  const ceiling = before.payable_balance_cents + released;
  if (released > 0) seen.reservesReleased++;
  if (nextRun === undefined || nextRun > now || ceiling <= 0) {
    expect(fresh, "no scheduled payout was due, or there was nothing to pay").toEqual([]);
    if (nextRun !== undefined && nextRun <= now) seen.scheduledNone++;
    return;
  }
  // The run and the reserve releases the same move made are not ordered: run first, it found nothing to pay.
  if (before.payable_balance_cents === 0 && fresh.length === 0) {
    seen.scheduledNone++;
    return;
  }
  expect(fresh).toHaveLength(1);
  const [paid] = fresh as [Body];
  expect(String(paid["reference_id"])).toMatch(new RegExp(`^schedule:${r.pid}:\\d{4}-\\d{2}-\\d{2}$`));
  expect(Number(paid["gross_amount_cents"]), "a scheduled payout is the whole payable balance, never more").toBeGreaterThanOrEqual(
    before.payable_balance_cents,
  );
  expect(Number(paid["gross_amount_cents"])).toBeLessThanOrEqual(ceiling);
  r.payouts.add(String(paid["id"]));
  seen.scheduledPaid++;
}

/** A daily schedule's next run is strictly after the org's now (its next midnight), so setting it pays nothing yet. */
async function setSchedule(r: Run, daily: boolean): Promise<void> {
  const before = await clockNow();
  const put = (await ok("PUT", `/v1/participants/${r.pid}/payout-schedule`, { interval: daily ? "daily" : "manual" }))["payout_schedule"] as Body;
  if (!daily) return;
  const next = Date.parse(String(put["next_run_at"]));
  expect(next, `next_run_at ${String(put["next_run_at"])} after the clock's ${new Date(before).toISOString()}`).toBeGreaterThan(before);
  expect(next - before).toBeLessThanOrEqual(86_400_000);
}

async function perform(r: Run, st: Step): Promise<void> {
  switch (st.kind) {
    case "sale":
      return sale(r, st.amount);
    case "reserve": {
      const body = st.percent === 0 ? { type: "none" } : { type: "rolling", percent: st.percent, days: st.days };
      await ok("PUT", `/v1/participants/${r.pid}/reserve`, body);
      return;
    }
    case "refund":
      return refund(r, st.pick, st.share);
    case "hold":
      return hold(r, st.share);
    case "release":
      return release(r, st.pick);
    case "advance":
      return advance(r, st.hours);
    case "payout":
      return payout(r, st.share);
    case "schedule":
      return setSchedule(r, st.daily);
  }
}

/** Every payout's statement adds up and ends with its own line; each opens where the previous one closed. */
async function expectStatementsAddUp(r: Run): Promise<void> {
  const payouts = (await payoutsOf(r.pid)).reverse();
  expect(payouts.map((p) => String(p["id"])).sort(), "no payout the sequence did not account for").toEqual([...r.payouts].sort());
  let previousClosing: number | undefined;
  for (const p of payouts) {
    const st = (await ok("GET", `/v1/payouts/${String(p["id"])}/statement`))["statement"] as Body;
    const lines = st["lines"] as Body[];
    const opening = Number(st["opening_balance_cents"]);
    const closing = Number(st["closing_balance_cents"]);
    const sum = lines.reduce((a, l) => a + Number(l["amount_cents"]), 0);
    expect(opening + sum, `statement of ${String(p["id"])}`).toBe(closing);
    expect(lines.at(-1)).toMatchObject({ type: "payout", amount_cents: -Number(p["gross_amount_cents"]), transaction_id: p["transaction_id"] });
    expect(closing).toBe(Number(p["new_balance_cents"]));
    expect(Number(p["gross_amount_cents"])).toBeGreaterThan(0);
    expect(Number(p["gross_amount_cents"]), "never more than the ledger balance").toBeLessThanOrEqual(Number(p["previous_balance_cents"]));
    if (previousClosing !== undefined) expect(opening, "opens where the previous statement closed").toBe(previousClosing);
    previousClosing = closing;
    seen.statements++;
  }
}

let seq = 0;
/** A sequence: how its creator starts (a rolling reserve or none, a daily schedule or none), then its steps. */
const sequence = fc.record({
  reserve: fc.record({ kind: fc.constant("reserve" as const), percent: fc.constantFrom(0, 10, 12.5), days: fc.integer({ min: 1, max: 3 }) }),
  schedule: fc.record({ kind: fc.constant("schedule" as const), daily: fc.boolean() }),
  steps: fc.array(step, { minLength: 4, maxLength: STEPS_MAX }),
});

async function runSequence(start: { reserve: Step; schedule: Step }, steps: Step[]): Promise<void> {
  const r: Run = { pid: `prop_${Date.now().toString(36)}_${seq++}`, n: 0, sales: [], holds: [], payouts: new Set(), log: [] };
  await ok("POST", "/v1/participants", { participant_id: r.pid, display_name: "Property", default_split_percent: 80 }, 201);
  try {
    for (const st of [start.reserve, start.schedule, { kind: "sale", amount: 5_000 } as Step, ...steps]) {
      r.n++;
      r.log.push(`${r.n}. ${JSON.stringify(st)}`);
      await perform(r, st);
      const snap = await snapshot(r.pid);
      r.log.push(
        `  balance ${snap.ledger_balance_cents}, available ${snap.available_balance_cents}, payable ${snap.payable_balance_cents}, reserved ${snap.reserved_amount_cents}`,
      );
      expect(snap.payable_balance_cents).toBeGreaterThanOrEqual(0);
      if (snap.ledger_balance_cents <= 0) expect(snap.payable_balance_cents).toBe(0);
      if (snap.ledger_balance_cents < 0) seen.negative++;
    }
    await expectStatementsAddUp(r);
    const report = await checkInvariants(s.env.adminSql, { orgId: s.orgId });
    expect(report.violations).toEqual([]);
  } catch (e) {
    throw new Error(`${r.pid}:\n${r.log.join("\n")}\n${e instanceof Error ? e.message : String(e)}`, { cause: e });
  } finally {
    // A finished sequence's creator no longer runs on the org's clock: later advances stay quick.
    await api("PUT", `/v1/participants/${r.pid}/payout-schedule`, { interval: "manual" });
  }
}

describe("money controls under random sequences", () => {
  it("pays no more than payable, never from nothing, with statements to the cent and a balanced ledger", { timeout: 300_000 }, async () => {
    const details = await fc.check(
      fc.asyncProperty(sequence, ({ steps, ...start }) => runSequence(start, steps)),
      { seed: SEED, numRuns: RUNS, endOnFailure: true },
    );
    if (details.failed) {
      const cause = details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance);
      throw new Error(`failed after ${details.numRuns} sequences; replay with MONEY_PROPERTY_SEED=${SEED}\n${cause.slice(0, 6_000)}`);
    }
    // Every kind of case was reached at least once, or the property proved less than it says.
    for (const [what, n] of Object.entries(seen)) expect(n, `${what} in ${JSON.stringify(seen)}`).toBeGreaterThan(0);
  });
});

describe("the clock a payout schedule reads", () => {
  it("a daily schedule set just after a clock advance next runs after the advanced now", async () => {
    // Proves every service moves with the org's clock at once: a schedule set after an advance is not already due.
    const r: Run = { pid: `prop_clock_${Date.now().toString(36)}`, n: 0, sales: [], holds: [], payouts: new Set(), log: [] };
    await ok("POST", "/v1/participants", { participant_id: r.pid, display_name: "Clock", default_split_percent: 80 }, 201);
    await sale(r, 5_000);
    await ok("POST", "/v1/sandbox/clock/advance", { by_seconds: 3 * 86_400 });
    await setSchedule(r, true);
    await ok("PUT", `/v1/participants/${r.pid}/payout-schedule`, { interval: "manual" });
  });
});

describe("the clock a schedule's delay reads", () => {
  it("money two sandbox days old waits for a seven-day delay, though the org's clock was moved before the sale", async () => {
    // Proves delay_days is counted on the org's clock: a sale's age is sandbox time, not the real time it was posted.
    // Its own org, so that no recent advance of the shared org is in the way of setting the schedule.
    const { org_id } = await createOrg(s.env.adminSql, { name: "Delayed payouts" });
    const key = (await s.key({ orgId: org_id })).api_key;
    const as = async (method: string, path: string, body?: unknown, status = 200): Promise<Body> => {
      const r = await call(s.baseUrl, method, path, { key, ...(body === undefined ? {} : { body }) });
      expect(r.status, `${method} ${path}: ${JSON.stringify(r.body)}`).toBe(status);
      return r.body;
    };
    const pid = `prop_delay_${Date.now().toString(36)}`;
    await as("POST", "/v1/participants", { participant_id: pid, display_name: "Delay", default_split_percent: 80 }, 201);
    await as("PUT", `/v1/participants/${pid}/payout-schedule`, { interval: "daily", delay_days: 7 });
    const ranPast = async (seconds: number) => {
      const now = Date.parse(String(((await as("POST", "/v1/sandbox/clock/advance", { by_seconds: seconds }))["clock"] as Body)["now"]));
      const next = async () => Date.parse(String(((await as("GET", `/v1/participants/${pid}/payout-schedule`))["payout_schedule"] as Body)["next_run_at"]));
      await waitFor(async () => (await next()) > now, { timeoutMs: SETTLE_MS });
    };
    await ranPast(10 * 86_400);
    const cs = (await as("POST", "/v1/checkout-sessions", { participant_id: pid, amount: 5_000 }, 201))["checkout_session"] as Body;
    await as("POST", `/v1/sandbox/checkouts/${String(cs["id"])}/complete`, {});
    await ranPast(2 * 86_400);
    expect((await as("GET", `/v1/payouts?participant_id=${pid}`))["payouts"]).toEqual([]);
    expect((await as("GET", `/v1/participants/${pid}`))["participant"]).toMatchObject({ payable_balance_cents: 4_000 });
    // Six more sandbox days make the sale eight days old on the clock (it was stamped on it, not in real time): paid.
    await ranPast(6 * 86_400);
    await waitFor(async () => ((await as("GET", `/v1/payouts?participant_id=${pid}`))["payouts"] as Body[]).length === 1, { timeoutMs: SETTLE_MS });
    expect((await as("GET", `/v1/payouts?participant_id=${pid}`))["payouts"]).toMatchObject([{ gross_amount_cents: 4_000 }]);
  });

  it("a sandbox posting is dated on the org's clock, in its answer, its entries and its transaction", async () => {
    const { org_id } = await createOrg(s.env.adminSql, { name: "Clock-dated entries" });
    const key = (await s.key({ orgId: org_id })).api_key;
    const as = async (method: string, path: string, body?: unknown, status = 200): Promise<Body> => {
      const r = await call(s.baseUrl, method, path, { key, ...(body === undefined ? {} : { body }) });
      expect(r.status, `${method} ${path}: ${JSON.stringify(r.body)}`).toBe(status);
      return r.body;
    };
    const pid = `prop_dated_${Date.now().toString(36)}`;
    await as("POST", "/v1/participants", { participant_id: pid, display_name: "Dated", default_split_percent: 80 }, 201);
    const advanced = Date.parse(String(((await as("POST", "/v1/sandbox/clock/advance", { by_seconds: 40 * 86_400 }))["clock"] as Body)["now"]));
    const cs = (await as("POST", "/v1/checkout-sessions", { participant_id: pid, amount: 2_500 }, 201))["checkout_session"] as Body;
    await as("POST", `/v1/sandbox/checkouts/${String(cs["id"])}/complete`, {});
    const wallet = (await as("GET", `/v1/participants/${pid}`))["participant"] as Body;
    const entries = (await as("GET", `/v1/wallets/${String(wallet["wallet_id"])}/entries`))["entries"] as Body[];
    expect(entries.length).toBeGreaterThan(0);
    for (const e of entries) expect(Date.parse(String(e["created_at"]))).toBeGreaterThanOrEqual(advanced - 1_000);
    const txns = (await as("GET", `/v1/get-transactions?limit=10`))["transactions"] as Body[];
    expect(txns.length).toBeGreaterThan(0);
    for (const t of txns) expect(Date.parse(String(t["created_at"]))).toBeGreaterThanOrEqual(advanced - 1_000);
  });
});
