// Proves buyer refund requests through real RPC, with the ledger and payments as real processes on real
// PostgreSQL and NATS: create (idempotent), approve executing the refund through the refund path, reject and
// cancel, every illegal move as invalid_state_transition naming the state, a refused approval as a failed
// request, each move's event, concurrent approve + cancel (exactly one wins) and double approve (one refund).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { authFor, creatorWallet, err, newOrg, ok, recordSale, startRefunds, type RefundsHarness } from "./test-support.ts";

let h: RefundsHarness;

beforeAll(async () => {
  h = await startRefunds();
}, 120_000);
afterAll(async () => {
  await h?.close();
});

type Auth = ReturnType<typeof authFor>;
type Row = Record<string, unknown> & { id: string; status: string };

const create = (auth: Auth, body: Record<string, unknown>) => h.call("refunds", "createRefundRequest", auth, { body });
const act = (auth: Auth, id: string, action: "approve" | "reject" | "cancel", body: Record<string, unknown> = {}) =>
  h.call("refunds", `${action}RefundRequest`, auth, { params: { refund_request_id: id }, body });

async function newRequest(auth: Auth, body: Record<string, unknown>): Promise<Row> {
  const r = ok(await create(auth, body));
  expect(r.status).toBe(201);
  return r.body["refund_request"] as Row;
}

async function eventTypes(org: string): Promise<string[]> {
  const rows = await h.env.adminSql<{ type: string }[]>`select type from refunds.outbox where org_id = ${org} order by seq`;
  return rows.map((r) => r.type);
}

async function ledgerRefunds(org: string): Promise<number> {
  const [row] = await h.env.adminSql<
    { n: string }[]
  >`select count(*)::text as n from ledger.transactions where org_id = ${org} and reference_id like 'refund%'`;
  return Number(row?.n);
}

describe("lifecycle", () => {
  it("create → approve executes the refund through the refund path and completes the request", async () => {
    // Proves the request shape, 201, approve answering {refund_request, refund}, the ledger reference from the request id, and the events in order.
    const auth = authFor(newOrg());
    const sale = await recordSale(h, auth, { amount: 3_000, creatorPercent: 60 });
    const rr = await newRequest(auth, {
      sale_reference: sale.saleReference,
      customer_id: "cust_1",
      customer_email: "b@example.com",
      amount: 1_000,
      reason: "arrived broken",
      metadata: { order: "o-1" },
    });
    expect(rr.id).toMatch(/^rr_[a-z0-9]{24}$/);
    expect(rr).toMatchObject({
      sale_reference: sale.saleReference,
      customer_id: "cust_1",
      customer_email: "b@example.com",
      amount_cents: 1_000,
      currency: "USD",
      reason: "arrived broken",
      refund_from: "both",
      status: "created",
      refund_transaction_id: null,
      reviewed_by_actor: null,
      metadata: { order: "o-1" },
    });
    const got = ok(await h.call("refunds", "getRefundRequest", auth, { params: { refund_request_id: rr.id } })).body;
    expect(got).toEqual({ refund_request: rr, refund: null });

    const approved = ok(await act(auth, rr.id, "approve", { reviewed_by_actor: "ops@shop", reason: "ok", metadata: { ticket: 7 } }));
    expect(approved.status).toBe(200);
    const done = approved.body["refund_request"] as Row;
    const refund = approved.body["refund"] as Row;
    expect(done).toMatchObject({ status: "completed", reviewed_by_actor: "ops@shop", refund_id: refund.id, refund_transaction_id: refund["transaction_id"] });
    expect(done["reviewed_at"]).not.toBeNull();
    expect(done["completed_at"]).not.toBeNull();
    expect(refund).toMatchObject({
      status: "completed",
      refund_request_id: rr.id,
      refunded_amount_cents: 1_000,
      reason: "arrived broken",
      breakdown: { from_creator_cents: 600, from_platform_cents: 400 },
    });
    const [tx] = await h.env.adminSql<{ reference_id: string }[]>`select reference_id from ledger.transactions where id = ${String(refund["transaction_id"])}`;
    expect(tx?.reference_id).toBe(`refund_request:${rr.id}`);
    expect(await creatorWallet(h, auth, sale.creator)).toEqual({ balance: 1_200, held: 0 });
    expect(await eventTypes(auth.org_id)).toEqual(["refund_request.created", "refund.created", "sale.refunded", "refund_request.completed"]);
    expect(ok(await h.call("refunds", "getRefund", auth, { params: { refund_id: refund.id } })).body["refund"]).toEqual(refund);

    // Approving again answers the outcome; every other move is illegal now.
    const again = ok(await act(auth, rr.id, "approve"));
    expect(again.body).toEqual({ ...approved.body, idempotent: true });
    for (const action of ["reject", "cancel"] as const) {
      const e = err(await act(auth, rr.id, action));
      expect([e.code, e.extra?.["state"]]).toEqual(["invalid_state_transition", "completed"]);
    }
    expect(await ledgerRefunds(auth.org_id)).toBe(1);
  });

  it("reject and cancel end a created request with their event; nothing moves, and no move leaves them", async () => {
    // Proves created → rejected | cancelled with reason and actor, and invalid_state_transition naming the state afterwards.
    const auth = authFor(newOrg());
    const sale = await recordSale(h, auth, { amount: 1_000, creatorPercent: 50 });
    const a = await newRequest(auth, { sale_reference: sale.saleReference });
    const b = await newRequest(auth, { sale_reference: sale.saleReference, customer_id: "c2" });
    const rejected = ok(await act(auth, a.id, "reject", { reason: "outside the window", reviewed_by_actor: "ops" })).body;
    expect(rejected).toEqual({
      refund_request: expect.objectContaining({ status: "rejected", rejection_reason: "outside the window", reviewed_by_actor: "ops" }),
      refund: null,
    });
    const cancelled = ok(await act(auth, b.id, "cancel", { reason: "buyer changed their mind" })).body["refund_request"] as Row;
    expect(cancelled).toMatchObject({ status: "cancelled", cancellation_reason: "buyer changed their mind" });
    expect(cancelled["cancelled_at"]).not.toBeNull();
    for (const [id, state] of [
      [a.id, "rejected"],
      [b.id, "cancelled"],
    ] as const) {
      for (const action of ["approve", "reject", "cancel"] as const) {
        const e = err(await act(auth, id, action));
        expect([e.code, e.extra?.["state"]]).toEqual(["invalid_state_transition", state]);
        expect(e.message).toContain(state);
      }
    }
    expect(await eventTypes(auth.org_id)).toEqual(["refund_request.created", "refund_request.created", "refund_request.rejected", "refund_request.cancelled"]);
    expect(await ledgerRefunds(auth.org_id)).toBe(0);
    expect(await creatorWallet(h, auth, sale.creator)).toEqual({ balance: 500, held: 0 });
  });

  it("an approval the ledger refuses fails the request with refund_request.failed", async () => {
    // Proves the refusal's code on approve, the failed request and refund, and that failed is final; and that a
    // request for a sale that does not exist, or for more than remains, is refused when it is made.
    const auth = authFor(newOrg());
    const sale = await recordSale(h, auth, { amount: 1_000, creatorPercent: 50 });
    expect(err(await create(auth, { sale_reference: "no-such-sale" })).code).toBe("original_sale_not_found");
    const over = err(await create(auth, { sale_reference: sale.saleReference, amount: 1_500 }));
    expect([over.code, over.extra?.["remaining_amount"]]).toEqual(["refund_amount_exceeds_remaining", 1_000]);
    const rr = await newRequest(auth, { sale_reference: sale.saleReference, amount: 800 });
    // Between the request and its approval, the sale is refunded in part: 800 no longer fits.
    ok(
      await h.call("refunds", "createRefund", auth, {
        body: { sale_reference: sale.saleReference, amount: 500, reason: "direct", idempotency_key: "direct-1" },
      }),
    );
    const e = err(await act(auth, rr.id, "approve"));
    expect([e.code, e.extra?.["remaining_amount"]]).toEqual(["refund_amount_exceeds_remaining", 500]);
    expect(e.extra?.["refund_request"]).toMatchObject({ status: "failed" });
    expect(String((e.extra?.["refund_request"] as Row)["failure_reason"])).toContain("refund_amount_exceeds_remaining");
    expect(e.extra?.["refund"]).toMatchObject({ status: "failed", failure_code: "refund_amount_exceeds_remaining" });
    expect(err(await act(auth, rr.id, "approve")).extra?.["state"]).toBe("failed");
    expect((await eventTypes(auth.org_id)).filter((t) => t.startsWith("refund_request."))).toEqual(["refund_request.created", "refund_request.failed"]);
    expect(await ledgerRefunds(auth.org_id)).toBe(1);
  });
});

describe("concurrency", () => {
  it("approve and cancel racing on one request: exactly one wins, the other gets invalid_state_transition", async () => {
    // Proves the row lock decides: per request either a completed refund or a cancellation, never both, never neither.
    const auth = authFor(newOrg());
    const sale = await recordSale(h, auth, { amount: 10_000, creatorPercent: 50 });
    let approvals = 0;
    for (let i = 0; i < 6; i++) {
      const rr = await newRequest(auth, { sale_reference: sale.saleReference, amount: 100 });
      const [ap, ca] = await Promise.all([act(auth, rr.id, "approve"), act(auth, rr.id, "cancel")]);
      expect([ap.ok, ca.ok].filter(Boolean)).toHaveLength(1);
      const loser = ap.ok ? ca : ap;
      expect(err(loser).code).toBe("invalid_state_transition");
      const final = (ok(await h.call("refunds", "getRefundRequest", auth, { params: { refund_request_id: rr.id } })).body["refund_request"] as Row).status;
      expect(final).toBe(ap.ok ? "completed" : "cancelled");
      if (ap.ok) approvals++;
    }
    expect(await ledgerRefunds(auth.org_id)).toBe(approvals);
    expect(await creatorWallet(h, auth, sale.creator)).toEqual({ balance: 5_000 - 50 * approvals, held: 0 });
  }, 60_000);

  it("concurrent double approve refunds once", async () => {
    // Proves one refund row and one ledger transaction however many approvals race.
    const auth = authFor(newOrg());
    const sale = await recordSale(h, auth, { amount: 2_000, creatorPercent: 50 });
    const rr = await newRequest(auth, { sale_reference: sale.saleReference });
    const answers = await Promise.all(Array.from({ length: 6 }, () => act(auth, rr.id, "approve")));
    const refunds = new Set(answers.map((a) => (ok(a).body["refund"] as Row).id));
    expect(refunds.size).toBe(1);
    expect(answers.filter((a) => a.ok && a.body["idempotent"] === undefined)).toHaveLength(1);
    expect(await ledgerRefunds(auth.org_id)).toBe(1);
    const [n] = await h.env.adminSql<{ n: string }[]>`select count(*)::text as n from refunds.refunds where refund_request_id = ${rr.id}`;
    expect(n?.n).toBe("1");
    expect(await creatorWallet(h, auth, sale.creator)).toEqual({ balance: 0, held: 0 });
  }, 60_000);
});

describe("create, read and bad input", () => {
  it("an idempotency_key replays the request; another body under it is idempotency_conflict", async () => {
    // Proves 201 then 200 with idempotent: true and one row, and the conflict answer.
    const auth = authFor(newOrg());
    const saleX = (await recordSale(h, auth, { amount: 1_000, creatorPercent: 50 })).saleReference;
    const saleY = (await recordSale(h, auth, { amount: 1_000, creatorPercent: 50 })).saleReference;
    const body = { sale_reference: saleX, customer_id: "c", idempotency_key: "rr-1" };
    const first = ok(await create(auth, body));
    const again = ok(await create(auth, { ...body, refund_from: "both" }));
    expect([first.status, again.status]).toEqual([201, 200]);
    expect(again.body).toEqual({ refund_request: first.body["refund_request"], refund: null, idempotent: true });
    expect(err(await create(auth, { ...body, amount: 5 })).code).toBe("idempotency_conflict");
    const raced = await Promise.all(Array.from({ length: 5 }, () => create(auth, { sale_reference: saleY, idempotency_key: "rr-2" })));
    expect(new Set(raced.map((r) => (ok(r).body["refund_request"] as Row).id)).size).toBe(1);
    expect(await eventTypes(auth.org_id)).toEqual(["refund_request.created", "refund_request.created"]);
  });

  it("lists by status and sale with paging; isolates environments; refuses bad input with precise codes and stores nothing", async () => {
    // Proves the list filters and envelope, 404s for bad or foreign ids, and validation on every field.
    const auth = authFor(newOrg());
    const saleA = (await recordSale(h, auth, { amount: 1_000, creatorPercent: 50 })).saleReference;
    const saleB = (await recordSale(h, auth, { amount: 1_000, creatorPercent: 50 })).saleReference;
    const a = await newRequest(auth, { sale_reference: saleA });
    const b = await newRequest(auth, { sale_reference: saleB });
    ok(await act(auth, b.id, "reject"));
    expect(ok(await h.call("refunds", "listRefundRequests", auth, { query: { status: "rejected" } })).body).toMatchObject({
      total: 1,
      count: 1,
      refund_requests: [expect.objectContaining({ id: b.id })],
    });
    expect(ok(await h.call("refunds", "listRefundRequests", auth, { query: { sale_reference: saleA } })).body).toMatchObject({
      total: 1,
      refund_requests: [expect.objectContaining({ id: a.id })],
    });
    expect(ok(await h.call("refunds", "listRefundRequests", auth, { query: { limit: "1" } })).body).toMatchObject({ total: 2, count: 1, limit: 1, offset: 0 });
    expect(err(await h.call("refunds", "listRefundRequests", auth, { query: { status: "approved" } })).code).toBe("validation_error");
    expect(err(await h.call("refunds", "listRefundRequests", auth, { query: { limit: "0" } })).code).toBe("invalid_limit");
    const live = authFor(auth.org_id, true);
    expect(err(await h.call("refunds", "getRefundRequest", live, { params: { refund_request_id: a.id } })).code).toBe("refund_request_not_found");
    expect(err(await act(live, a.id, "approve")).code).toBe("refund_request_not_found");
    for (const id of ["rr_", "x", "re_abc"]) expect(err(await act(auth, id, "cancel")).code).toBe("refund_request_not_found");
    const bad: Record<string, unknown>[] = [
      {},
      { sale_reference: "" },
      { sale_reference: 5 },
      { sale_reference: "s", amount: 0 },
      { sale_reference: "s", amount: 1.5 },
      { sale_reference: "s", amount: 100_000_000_001 },
      { sale_reference: "s", customer_email: "not-an-email" },
      { sale_reference: "s", refund_from: "everyone" },
      { sale_reference: "s", reason: "x".repeat(1001) },
      { sale_reference: "s", metadata: "m" },
      { sale_reference: "s", idempotency_key: "" },
      { sale_reference: "s", customer_id: "" },
    ];
    for (const body of bad) {
      const e = err(await create(auth, body));
      expect(["validation_error", "amount_too_large"], JSON.stringify(body)).toContain(e.code);
    }
    for (const body of [{ reason: 5 }, { reviewed_by_actor: "x".repeat(256) }, { metadata: [] }])
      expect(err(await act(auth, a.id, "approve", body)).code).toBe("validation_error");
    const [n] = await h.env.adminSql<{ n: string }[]>`select count(*)::text as n from refunds.refund_requests where org_id = ${auth.org_id}`;
    expect(n?.n).toBe("2");
    expect((ok(await h.call("refunds", "getRefundRequest", auth, { params: { refund_request_id: a.id } })).body["refund_request"] as Row).status).toBe(
      "created",
    );
  });
});
