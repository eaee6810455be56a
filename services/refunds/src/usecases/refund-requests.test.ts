// Proves the refund request workflow on in-memory fakes: an approval records and executes its refund and
// completes the request (a repeated approval answers the same outcome), a ledger refusal fails both, a rejection
// is final, and the create key tells a replay from a different request.
import { DomainError } from "@treasury/contracts";
import { describe, expect, it } from "vitest";
import { fakeDeps, type FakeDeps } from "./fakes.ts";
import { approveRefundRequest, createRefundRequest, decideRefundRequest, getRefundRequest } from "./refund-requests.ts";

const tenant = { orgId: "org_a", livemode: false };

async function refusal(p: Promise<unknown>): Promise<DomainError> {
  const e: unknown = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  if (!(e instanceof DomainError)) throw new Error(`expected a DomainError, got ${String(e)}`);
  return e;
}

async function created(deps: FakeDeps, extra: Record<string, unknown> = {}): Promise<string> {
  const { request, refund, replayed } = await createRefundRequest(deps, tenant, { sale_reference: "sale_1", amount: 1_000, reason: "broken", ...extra });
  expect([request.status, refund, replayed]).toEqual(["created", undefined, false]);
  return request.id;
}

describe("approve", () => {
  it("records the refund under the request's reference, settles it and completes the request; a repeat answers the same", async () => {
    const deps = fakeDeps();
    const id = await created(deps);
    const approved = await approveRefundRequest(deps, tenant, id, { reviewed_by_actor: "ops@example.com" });
    expect(approved.replayed).toBe(false);
    expect(approved.request).toMatchObject({ status: "completed", reviewed_by_actor: "ops@example.com", refund_transaction_id: "txn_1" });
    expect(approved.refund).toMatchObject({ status: "completed", refund_request_id: id, refunded_amount: 1_000 });
    expect(deps.ledger.posts.map((p) => p.reference_id)).toEqual([`refund_request:${id}`]);
    expect(deps.store.eventTypes()).toEqual(["refund_request.created", "refund.created", "sale.refunded", "refund_request.completed"]);

    const again = await approveRefundRequest(deps, tenant, id, {});
    expect(again).toMatchObject({ replayed: true, request: { status: "completed" }, refund: { id: approved.refund?.id } });
    expect(deps.ledger.posts).toHaveLength(1);
    expect(await getRefundRequest(deps, tenant, id)).toEqual({ request: again.request, refund: again.refund });
  });

  it("a definitive ledger refusal fails the refund and the request, and the error carries the failed request", async () => {
    const deps = fakeDeps();
    const id = await created(deps);
    deps.ledger.behaviour = { kind: "refuse", code: "insufficient_balance" };
    const e = await refusal(approveRefundRequest(deps, tenant, id, {}));
    expect(e.code).toBe("insufficient_balance");
    expect(e.extra).toMatchObject({ refund: { status: "failed" }, refund_request: { id, status: "failed" } });
    const { request, refund } = await getRefundRequest(deps, tenant, id);
    expect(request).toMatchObject({ status: "failed", failure_reason: "insufficient_balance: refused by the ledger" });
    expect(refund).toMatchObject({ status: "failed", failure_code: "insufficient_balance" });
    expect(deps.store.eventTypes()).toEqual(["refund_request.created", "refund_request.failed"]);
    // A failed request is final: approving it again is an illegal move.
    expect((await refusal(approveRefundRequest(deps, tenant, id, {}))).code).toBe("invalid_state_transition");
  });

  it("a ledger that does not answer leaves the request processing with its refund pending", async () => {
    const deps = fakeDeps();
    const id = await created(deps);
    deps.ledger.behaviour = { kind: "silent" };
    expect((await refusal(approveRefundRequest(deps, tenant, id, {}))).code).toBe("service_timeout");
    const { request, refund } = await getRefundRequest(deps, tenant, id);
    expect([request.status, refund?.status]).toEqual(["processing", "pending"]);
    deps.ledger.behaviour = { kind: "post" };
    const driven = await approveRefundRequest(deps, tenant, id, {});
    expect([driven.replayed, driven.request.status, driven.refund?.status]).toEqual([true, "completed", "completed"]);
  });
});

describe("reject and cancel", () => {
  it("reject moves a created request to rejected with its event; afterwards no review moves it", async () => {
    const deps = fakeDeps();
    const id = await created(deps);
    const rejected = await decideRefundRequest(deps, tenant, id, "reject", { reason: "not eligible" });
    expect(rejected).toMatchObject({ status: "rejected", rejection_reason: "not eligible" });
    expect(deps.store.eventTypes()).toEqual(["refund_request.created", "refund_request.rejected"]);
    for (const move of [() => approveRefundRequest(deps, tenant, id, {}), () => decideRefundRequest(deps, tenant, id, "cancel", {})]) {
      const e = await refusal(move());
      expect(e.code).toBe("invalid_state_transition");
      expect(e.extra).toMatchObject({ state: "rejected" });
    }
    expect(deps.ledger.posts).toEqual([]);
    expect(deps.store.events).toHaveLength(2);
  });

  it("an unknown or other org's request is refund_request_not_found", async () => {
    const deps = fakeDeps();
    const id = await created(deps);
    expect((await refusal(decideRefundRequest(deps, { orgId: "org_b", livemode: false }, id, "cancel", {}))).code).toBe("refund_request_not_found");
    expect((await refusal(decideRefundRequest(deps, tenant, "rr_unknown", "cancel", {}))).code).toBe("refund_request_not_found");
  });
});

describe("create", () => {
  it("the same idempotency_key answers the first request; with a different request it is idempotency_conflict", async () => {
    const deps = fakeDeps();
    const id = await created(deps, { idempotency_key: "n1" });
    const again = await createRefundRequest(deps, tenant, { sale_reference: "sale_1", amount: 1_000, reason: "broken", idempotency_key: "n1" });
    expect([again.replayed, again.request.id]).toEqual([true, id]);
    const e = await refusal(createRefundRequest(deps, tenant, { sale_reference: "sale_1", amount: 2_000, reason: "broken", idempotency_key: "n1" }));
    expect(e.code).toBe("idempotency_conflict");
    expect(deps.store.requests.size).toBe(1);
  });

  it("a sale that cannot be refunded by the amount asked is refused before anything is recorded", async () => {
    const deps = fakeDeps();
    const e = await refusal(createRefundRequest(deps, tenant, { sale_reference: "sale_1", amount: 10_001 }));
    expect([e.code, e.extra]).toEqual(["refund_amount_exceeds_remaining", { remaining_amount: 10_000 }]);
    deps.ledger.sale = { ...deps.ledger.sale, reversed: true };
    expect((await refusal(createRefundRequest(deps, tenant, { sale_reference: "sale_1" }))).code).toBe("sale_already_reversed");
    expect(deps.store.requests.size).toBe(0);
    expect(deps.store.events).toEqual([]);
  });
});
