// Proves refund request expiry on real PostgreSQL and NATS, with the ledger as a real process and two refunds
// replicas: an advance of the org's sandbox clock through the ledger reaches both replicas' copies and expires a
// sandbox request within seconds, exactly once (one refund_request.cancelled) however many passes run, while a
// live request and another org's are untouched; two thousand due requests expire in batches, each once, with both
// replicas passing at the same moment; and approvals racing the advance leave each request one outcome.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allowRisk, waitFor } from "@treasury/testing";
import { buildRefunds, type RefundsService } from "./service.ts";
import { authFor, err, newOrg, ok, recordSale, startRefunds, type RefundsHarness } from "./test-support.ts";

const DAY_S = 86_400;
// Timer passes off: what runs is what a clock advance wakes and what a test starts.
const ENV = { REFUNDS_EXPIRY_INTERVAL_MS: "0", REFUNDS_EXPIRY_BATCH_MAX: "500" };

let h: RefundsHarness;
let replica: RefundsService;

beforeAll(async () => {
  h = await startRefunds({ env: ENV });
  replica = await buildRefunds(h.env.env("refunds", { REFUNDS_RECONCILE_INTERVAL_MS: "600000", ...ENV }), { risk: allowRisk });
  await replica.start();
}, 120_000);
afterAll(async () => {
  await replica?.stop();
  await h?.close();
});

type Auth = ReturnType<typeof authFor>;
type Row = Record<string, unknown> & { id: string; status: string };

async function newRequest(auth: Auth, saleReference: string, amount = 100): Promise<Row> {
  const r = ok(await h.call("refunds", "createRefundRequest", auth, { body: { sale_reference: saleReference, amount } }));
  return r.body["refund_request"] as Row;
}

async function request(auth: Auth, id: string): Promise<Row> {
  return ok(await h.call("refunds", "getRefundRequest", auth, { params: { refund_request_id: id } })).body["refund_request"] as Row;
}

/** The refund_request.* events of `org` by request id, in outbox order. */
async function eventsByRequest(org: string): Promise<Map<string, string[]>> {
  const rows = await h.env.adminSql<{ id: string; type: string }[]>`
    select payload->'data'->>'id' as id, type from refunds.outbox where org_id = ${org} and type like 'refund_request.%' order by seq`;
  const out = new Map<string, string[]>();
  for (const r of rows) out.set(r.id, [...(out.get(r.id) ?? []), r.type]);
  return out;
}

async function advance(auth: Auth, seconds: number): Promise<void> {
  ok(await h.call("ledger", "advanceSandboxClock", auth, { body: { by_seconds: seconds } }));
}

/** Both replicas' copies of the org's clock run `seconds` ahead. */
function clocksAt(org: string, seconds: number): Promise<boolean> {
  return waitFor(async () => h.refunds.clock.advancedSeconds(org) === seconds && replica.clock.advancedSeconds(org) === seconds, { timeoutMs: 10_000 });
}

describe("expiry on the org's sandbox clock", () => {
  it("expires a sandbox request within seconds of an advance past its deadline, once, and nothing live or of another org", async () => {
    const org = newOrg();
    const auth = authFor(org);
    const liveAuth = authFor(org, true);
    const other = authFor(newOrg());
    const sale = await recordSale(h, auth, { amount: 5_000, creatorPercent: 80 });
    const liveSale = await recordSale(h, liveAuth, { amount: 5_000, creatorPercent: 80 });
    const otherSale = await recordSale(h, other, { amount: 5_000, creatorPercent: 80 });
    const rr = await newRequest(auth, sale.saleReference);
    const live = await newRequest(liveAuth, liveSale.saleReference);
    const untouched = await newRequest(other, otherSale.saleReference);
    expect(Date.parse(String(rr["expires_at"])) - Date.parse(String(rr["created_at"]))).toBeGreaterThanOrEqual(30 * DAY_S * 1000);

    await advance(auth, 29 * DAY_S);
    await clocksAt(org, 29 * DAY_S);
    await Promise.all([h.refunds.expiry.runOnce(), replica.expiry.runOnce()]);
    expect((await request(auth, rr.id)).status).toBe("created");

    await advance(auth, 2 * DAY_S);
    const expired = await waitFor(
      async () => {
        const row = await request(auth, rr.id);
        return row.status === "cancelled" ? row : false;
      },
      { timeoutMs: 10_000 },
    );
    expect(expired).toMatchObject({ cancelled_by: "schedule", cancellation_reason: "expired", refund_id: null, expires_at: rr["expires_at"] });
    expect(Date.parse(String(expired["cancelled_at"]))).toBeGreaterThanOrEqual(Date.parse(String(rr["expires_at"])));
    // Every pass after it, on both replicas at once, finds nothing more to do.
    await Promise.all([h.refunds.expiry.runOnce(), replica.expiry.runOnce(), h.refunds.expiry.runOnce()]);
    expect((await eventsByRequest(org)).get(rr.id)).toEqual(["refund_request.created", "refund_request.cancelled"]);
    const e = err(await h.call("refunds", "approveRefundRequest", auth, { params: { refund_request_id: rr.id }, body: {} }));
    expect([e.code, e.extra?.["state"]]).toEqual(["invalid_state_transition", "cancelled"]);

    expect((await request(liveAuth, live.id)).status).toBe("created");
    expect((await request(other, untouched.id)).status).toBe("created");
  });

  it("expires two thousand due requests in batches, each once, with both replicas passing together", async () => {
    const org = newOrg();
    const ids = Array.from({ length: 2_000 }, () => `rr_${randomBytes(12).toString("hex")}`);
    // Seeded as the create operation stores them, already past their deadline on real time.
    await h.env.adminSql`
      insert into refunds.refund_requests (id, org_id, livemode, sale_reference, refund_from, status, request_hash, created_at, updated_at, expires_at)
      select id, ${org}, false, 'sale_bulk', 'both', 'created', 'seeded', now() - interval '31 days', now() - interval '31 days', now() - interval '1 day'
      from unnest(${ids}::text[]) as id`;
    const passes = await Promise.all([h.refunds.expiry.runOnce(), replica.expiry.runOnce()]);
    // The leader lock lets one replica pass (it may also expire what earlier tests left due); the other answers undefined.
    expect(passes.filter((n) => n === undefined)).toHaveLength(1);
    expect(passes.find((n) => n !== undefined)).toBeGreaterThanOrEqual(2_000);
    const events = await eventsByRequest(org);
    expect(events.size).toBe(2_000);
    expect([...events.values()].every((types) => types.length === 1 && types[0] === "refund_request.cancelled")).toBe(true);
    const [left] = await h.env.adminSql<{ n: string }[]>`select count(*)::text as n from refunds.refund_requests where org_id = ${org} and status = 'created'`;
    expect(left?.n).toBe("0");
  });
});

describe("an approval racing the expiry", () => {
  it("leaves each request one outcome: approved and refunded, or expired with no refund", async () => {
    const org = newOrg();
    const auth = authFor(org);
    const sale = await recordSale(h, auth, { amount: 10_000, creatorPercent: 80 });
    const requests: Row[] = [];
    for (let i = 0; i < 30; i++) requests.push(await newRequest(auth, sale.saleReference));
    // The advance travels ledger → event → each replica's copy (waking its expiry pass) while every request is
    // approved, a few at a time: the first waves land before the clock moves, later ones race the pass.
    const advanced = advance(auth, 31 * DAY_S);
    const answers = new Map<string, { ok: boolean; state?: unknown }>();
    const pending = [...requests];
    while (pending.length > 0) {
      const wave = pending.splice(0, 3);
      const replies = await Promise.all(wave.map((r) => h.call("refunds", "approveRefundRequest", auth, { params: { refund_request_id: r.id }, body: {} })));
      replies.forEach((reply, i) => answers.set(wave[i]?.id ?? "", reply.ok ? { ok: true } : { ok: false, state: reply.error.extra?.["state"] }));
    }
    await advanced;
    await waitFor(
      async () => (await Promise.all(requests.map((r) => request(auth, r.id)))).every((r) => r.status === "completed" || r.status === "cancelled"),
      {
        timeoutMs: 20_000,
      },
    );

    const events = await eventsByRequest(org);
    const refunds = await h.env.adminSql<{ refund_request_id: string; status: string }[]>`
      select refund_request_id, status from refunds.refunds where org_id = ${org}`;
    const refunded = new Map(refunds.map((r) => [r.refund_request_id, r.status]));
    for (const r of requests) {
      const row = await request(auth, r.id);
      const answer = answers.get(r.id);
      if (row.status === "completed") {
        expect(events.get(r.id)).toEqual(["refund_request.created", "refund_request.completed"]);
        expect(refunded.get(r.id)).toBe("completed");
        expect(answer).toEqual({ ok: true });
      } else {
        expect(row).toMatchObject({ status: "cancelled", cancelled_by: "schedule", refund_id: null });
        expect(events.get(r.id)).toEqual(["refund_request.created", "refund_request.cancelled"]);
        expect(refunded.has(r.id)).toBe(false);
        expect(answer).toEqual({ ok: false, state: "cancelled" });
      }
    }
    // The ledger refunded exactly the approved requests: the sale's remainder says how many.
    const completed = requests.length - [...events.values()].filter((t) => t.includes("refund_request.cancelled")).length;
    const [txns] = await h.env.adminSql<{ n: string }[]>`
      select count(*)::text as n from ledger.transactions where org_id = ${org} and reference_id like 'refund_request:%'`;
    expect(Number(txns?.n)).toBe(completed);
  });
});
