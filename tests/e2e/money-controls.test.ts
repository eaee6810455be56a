// Money controls through the gateway, driven by the org's sandbox clock instead of waiting: a hold that releases
// itself at its date, a 10 % rolling reserve released on day 30 to the cent, a weekly payout schedule that pays its
// anchor day once, a payout statement whose lines sum to its closing balance, and a live key that cannot move a
// clock. Real PostgreSQL and NATS; every service as it runs.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateKeyRingEntry } from "@treasury/service-kit";
import { waitFor } from "@treasury/testing";
import { call, startStack, type Stack } from "./stack.ts";

type Body = Record<string, unknown>;
let s: Stack;
const DAY = 86_400;

const api = (method: string, path: string, body?: unknown, key = s.testKey) => call(s.baseUrl, method, path, { key, ...(body === undefined ? {} : { body }) });

async function ok(method: string, path: string, body: unknown, status = 200): Promise<Body> {
  const r = await api(method, path, body);
  expect(r.status, `${method} ${path}: ${JSON.stringify(r.body)}`).toBe(status);
  return r.body;
}

async function clockNow(): Promise<Date> {
  return new Date(String(((await ok("GET", "/v1/sandbox/clock", undefined))["clock"] as Body)["now"]));
}

async function advance(seconds: number): Promise<Date> {
  return new Date(String(((await ok("POST", "/v1/sandbox/clock/advance", { by_seconds: seconds }))["clock"] as Body)["now"]));
}

let seq = 0;
async function creator(): Promise<string> {
  const id = `mc_creator_${Date.now().toString(36)}_${seq++}`;
  await ok("POST", "/v1/participants", { participant_id: id, display_name: "Money Controls", default_split_percent: 80 }, 201);
  return id;
}

/** A completed sandbox sale of `amount` to `participant`; answers the completed checkout. */
async function sale(participant: string, amount: number): Promise<Body> {
  const cs = (await ok("POST", "/v1/checkout-sessions", { participant_id: participant, amount }, 201))["checkout_session"] as Body;
  const done = await ok("POST", `/v1/sandbox/checkouts/${String(cs["id"])}/complete`, { idempotency_key: `mc-${String(cs["id"])}` });
  return done["checkout_session"] as Body;
}

async function snapshot(participant: string): Promise<Body> {
  return (await ok("GET", `/v1/participants/${participant}`, undefined))["participant"] as Body;
}

beforeAll(async () => {
  s = await startStack({
    services: ["ledger", "payments", "payouts", "refunds"],
    serviceEnv: { payouts: { PII_KEYS: generateKeyRingEntry("mc1") } },
  });
  const lifted = { capacity: 1e9, refill_per_sec: 1e9 };
  await s.env
    .adminSql`update gateway.orgs set rate_limits = ${s.env.adminSql.json({ read: lifted, write: lifted, treasury_write: lifted })} where id = ${s.orgId}`;
}, 120_000);

afterAll(async () => {
  await s?.stop();
});

describe("the sandbox clock", () => {
  it("moves forward only, by seconds or to a time, and never with a live key", async () => {
    const before = await clockNow();
    const moved = await advance(3_600);
    expect(moved.getTime() - before.getTime()).toBeGreaterThanOrEqual(3_600_000);
    const to = new Date(moved.getTime() + 2 * 3_600_000).toISOString();
    const reached = await ok("POST", "/v1/sandbox/clock/advance", { to });
    expect(new Date(String((reached["clock"] as Body)["now"])).getTime()).toBeGreaterThanOrEqual(Date.parse(to));
    const back = await api("POST", "/v1/sandbox/clock/advance", { to: before.toISOString() });
    expect([back.status, back.body["error_code"]]).toEqual([400, "clock_backwards"]);
    for (const body of [{}, { by_seconds: 0 }, { by_seconds: "1" }, { to: "yesterday" }, { to, by_seconds: 5 }]) {
      const bad = await api("POST", "/v1/sandbox/clock/advance", body);
      expect([bad.status, bad.body["error_code"]], JSON.stringify(body)).toEqual([400, "validation_error"]);
    }
    const live = await api("POST", "/v1/sandbox/clock/advance", { by_seconds: 60 }, s.liveKey);
    expect([live.status, live.body["error_code"]]).toEqual([403, "sandbox_only"]);
    expect((await api("GET", "/v1/sandbox/clock", undefined, s.liveKey)).body["error_code"]).toBe("sandbox_only");
  });
});

describe("holds and reserves on the clock", () => {
  it("releases an auto-release hold at its date, once, by the schedule", async () => {
    const pid = await creator();
    await sale(pid, 5_000);
    const until = new Date((await clockNow()).getTime() + 3 * DAY * 1000).toISOString();
    const created = await ok(
      "POST",
      "/v1/holds",
      { participant_id: pid, amount: 700, reference_id: `mc-hold-${pid}`, hold_until: until, auto_release: true },
      201,
    );
    const holdId = String((created["hold"] as Body)["id"]);
    await advance(2 * DAY);
    const held = await ok("GET", `/v1/holds?participant_id=${pid}`, undefined);
    expect((held["holds"] as Body[]).map((h) => h["id"])).toContain(holdId);
    await advance(DAY + 60);
    await waitFor(async () => ((await ok("GET", `/v1/holds?participant_id=${pid}`, undefined))["holds"] as Body[]).every((h) => h["id"] !== holdId), {
      timeoutMs: 20_000,
    });
    const again = await api("POST", `/v1/holds/${holdId}/release`, {});
    expect(again.body["error_code"]).toBe("hold_already_released");
    expect(await auto(holdId)).toBe(1);
    const bad = await api("POST", "/v1/holds", { participant_id: pid, amount: 100, reference_id: `mc-bad-${pid}`, auto_release: true });
    expect([bad.status, bad.body["error_code"]]).toEqual([400, "validation_error"]);
  });

  it("keeps 10 % of each new sale's creator share for 30 days and releases it on day 30 to the cent", async () => {
    const pid = await creator();
    const reserve = await ok("PUT", `/v1/participants/${pid}/reserve`, { type: "rolling", percent: 10, days: 30 });
    expect(reserve["reserve"]).toMatchObject({ type: "rolling", percent: 10, days: 30 });
    const done = await sale(pid, 10_000);
    // The checkout's own hold is the one it asked for (none here), never the reserve's.
    expect(done["hold_id"]).toBeNull();
    expect(await snapshot(pid)).toMatchObject({ ledger_balance_cents: 8_000, reserved_amount_cents: 800 });
    await advance(29 * DAY);
    expect(await snapshot(pid)).toMatchObject({ reserved_amount_cents: 800 });
    await advance(DAY + 60);
    await waitFor(async () => (await snapshot(pid))["reserved_amount_cents"] === 0, { timeoutMs: 20_000 });
    expect(await snapshot(pid)).toMatchObject({ ledger_balance_cents: 8_000, reserved_amount_cents: 0 });
    for (const body of [{ type: "rolling", percent: 10 }, { type: "fixed" }, { type: "rolling", percent: 100.001, days: 3 }, { type: "weekly" }]) {
      const bad = await api("PUT", `/v1/participants/${pid}/reserve`, body);
      expect([bad.status, bad.body["error_code"]], JSON.stringify(body)).toEqual([400, "validation_error"]);
    }
  });
});

describe("reserves and a fixed floor on payouts", () => {
  it("a hold_funds checkout keeps its own hold beside the reserve's; a payout never takes the fixed floor", async () => {
    const pid = await creator();
    await ok("PUT", `/v1/participants/${pid}/reserve`, { type: "rolling", percent: 25, days: 7 });
    const cs = (await ok("POST", "/v1/checkout-sessions", { participant_id: pid, amount: 10_000, hold_funds: true }, 201))["checkout_session"] as Body;
    const done = (await ok("POST", `/v1/sandbox/checkouts/${String(cs["id"])}/complete`, { idempotency_key: `mc-h-${pid}` }))["checkout_session"] as Body;
    const holds = (await snapshot(pid))["holds"] as Body[];
    expect(holds.map((h) => [h["reason"], h["amount_cents"]]).sort()).toEqual([
      ["checkout_hold", 6_000],
      ["reserve", 2_000],
    ]);
    expect(done["hold_id"]).toBe(holds.find((h) => h["reason"] === "checkout_hold")?.["hold_id"]);
    await ok("POST", `/v1/holds/${String(done["hold_id"])}/release`, {});

    await ok("PUT", `/v1/participants/${pid}/reserve`, { type: "fixed", amount_cents: 1_500 });
    expect(await snapshot(pid)).toMatchObject({ available_balance_cents: 6_000, payable_balance_cents: 4_500, reserved_amount_cents: 3_500 });
    const over = await api("POST", "/v1/payouts", { participant_id: pid, amount: 4_501, reference_id: `mc-floor-${pid}` });
    expect([over.status, over.body["error_code"]]).toEqual([422, "insufficient_balance"]);
    expect(await snapshot(pid)).toMatchObject({ ledger_balance_cents: 8_000 });
    await ok("POST", "/v1/payouts", { participant_id: pid, amount: 4_500, reference_id: `mc-floor-${pid}` }, 201);
    expect(await snapshot(pid)).toMatchObject({ ledger_balance_cents: 3_500, payable_balance_cents: 0 });
  });
});

describe("negative balances", () => {
  it("a refund after the payout leaves the balance negative, and the next earnings repay it first", async () => {
    const pid = await creator();
    const sold = await sale(pid, 10_000);
    await ok("POST", "/v1/payouts", { participant_id: pid, amount: 8_000, reference_id: `mc-po-${pid}` }, 201);
    await ok("POST", "/v1/refunds", { sale_reference: String(sold["sale_reference"]), reason: "not as described", idempotency_key: `mc-rf-${pid}` }, 201);
    expect(await snapshot(pid)).toMatchObject({ ledger_balance_cents: -8_000, owed_amount_cents: 8_000, available_balance_cents: 0, payable_balance_cents: 0 });
    const refused = await api("POST", "/v1/payouts", { participant_id: pid, amount: 1, reference_id: `mc-po2-${pid}` });
    expect(refused.body["error_code"]).toBe("insufficient_balance");
    await sale(pid, 5_000);
    expect(await snapshot(pid)).toMatchObject({ ledger_balance_cents: -4_000, owed_amount_cents: 4_000, available_balance_cents: 0 });
    await sale(pid, 12_500);
    expect(await snapshot(pid)).toMatchObject({ ledger_balance_cents: 6_000, owed_amount_cents: 0, available_balance_cents: 6_000 });
  });
});

/** Ledger releases of a hold by the schedule (what `hold.released` said). */
async function auto(holdId: string): Promise<number> {
  const rows = await s.env.adminSql<{ n: number }[]>`
    select count(*)::int as n from ledger.outbox
     where type = 'hold.released' and payload->'data'->>'hold_id' = ${holdId} and payload->'data'->>'released_by' = 'schedule'`;
  return rows[0]?.n ?? 0;
}

describe("payout schedules and statements", () => {
  it("pays a weekly schedule on its anchor day once, and its statement sums to the cent", async () => {
    const pid = await creator();
    await sale(pid, 10_000);
    await sale(pid, 2_500);
    const now = await clockNow();
    const anchor = ["sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"][(now.getUTCDay() + 2) % 7];
    const put = await ok("PUT", `/v1/participants/${pid}/payout-schedule`, { interval: "weekly", weekly_anchor: anchor });
    const schedule = put["payout_schedule"] as Body;
    expect(schedule).toMatchObject({ interval: "weekly", weekly_anchor: anchor });
    expect(Date.parse(String(schedule["next_run_at"]))).toBeGreaterThan(now.getTime());
    await advance(3 * DAY);
    const payouts = async () => ((await ok("GET", `/v1/payouts?participant_id=${pid}`, undefined))["payouts"] as Body[]) ?? [];
    await waitFor(async () => (await payouts()).length === 1, { timeoutMs: 20_000 });
    await advance(3_600);
    const [payout] = await payouts();
    expect(payout).toMatchObject({ gross_amount_cents: 10_000, reference_id: expect.stringMatching(new RegExp(`^schedule:${pid}:\\d{4}-W\\d{2}$`)) });
    expect(await payouts()).toHaveLength(1);

    const statement = (await ok("GET", `/v1/payouts/${String(payout?.["id"])}/statement`, undefined))["statement"] as Body;
    const lines = statement["lines"] as Body[];
    const sum = lines.reduce((a, l) => a + Number(l["amount_cents"]), 0);
    expect(Number(statement["opening_balance_cents"]) + sum).toBe(Number(statement["closing_balance_cents"]));
    expect(lines.map((l) => l["type"])).toEqual(["sale", "sale", "payout"]);
    const csv = await call(s.baseUrl, "GET", `/v1/payouts/${String(payout?.["id"])}/statement?format=csv`, { key: s.testKey });
    expect(csv.status).toBe(200);
    expect(csv.headers.get("content-type")).toContain("text/csv");
    expect(String(csv.body["__raw"]).split("\r\n")[0]).toBe("occurred_at,type,transaction_id,reference,amount_cents,balance_cents");
    const bad = await api("GET", `/v1/payouts/${String(payout?.["id"])}/statement?format=pdf`);
    expect([bad.status, bad.body["error_code"]]).toEqual([400, "validation_error"]);
  });
});
