// Proves the money path of a refund (intent → ledger post → settle) on in-memory fakes: a refund that completes,
// a definitive ledger refusal that fails it, a ledger that does not answer (the refund stays pending and a later
// driver completes it), replays that answer the first refund without moving money again, and the same key with a
// different request refused as duplicate_refund_reference.
import { DomainError } from "@treasury/contracts";
import { describe, expect, it } from "vitest";
import { createRefund } from "./create-refund.ts";
import { fakeDeps } from "./fakes.ts";
import { reconcilePass } from "./reconcile.ts";

const tenant = { orgId: "org_a", livemode: false };
const body = { original_sale_reference: "sale_1", reason: "damaged", amount: 2_500, idempotency_key: "k1" };

async function refusal(p: Promise<unknown>): Promise<DomainError> {
  const e: unknown = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  if (!(e instanceof DomainError)) throw new Error(`expected a DomainError, got ${String(e)}`);
  return e;
}

describe("createRefund", () => {
  it("records the intent, posts it to the ledger under the refund's own reference and settles it with its events", async () => {
    const deps = fakeDeps();
    const { refund, replayed } = await createRefund(deps, tenant, body);
    expect(replayed).toBe(false);
    expect(refund).toMatchObject({ status: "completed", refunded_amount: 2_500, transaction_id: "txn_1", remaining_amount: 7_500, shortfall: "receivable" });
    expect(deps.ledger.posts).toHaveLength(1);
    expect(deps.ledger.posts[0]).toMatchObject({ kind: "refund", reference_id: `refund:${refund.id}`, refund: { sale_reference: "sale_1", amount: 2_500 } });
    expect(deps.store.eventTypes()).toEqual(["refund.created", "sale.refunded"]);
    expect(deps.store.events[0]?.data).toMatchObject({ id: refund.id, status: "completed", refunded_amount_cents: 2_500 });
  });

  it("runs the crash points in order: after the intent before the post, after the post before the settle", async () => {
    const deps = fakeDeps();
    const seen: string[] = [];
    deps.afterIntent = async () => void seen.push(`intent:${deps.store.refunds.size}:${deps.ledger.posts.length}`);
    deps.afterLedgerPost = async () => void seen.push(`posted:${deps.ledger.posts.length}:${deps.store.events.length}`);
    await createRefund(deps, tenant, body);
    expect(seen).toEqual(["intent:1:0", "posted:1:0"]);
  });

  it("a definitive ledger refusal fails the refund and answers the ledger's code with the failed refund", async () => {
    const deps = fakeDeps();
    deps.ledger.behaviour = { kind: "refuse", code: "refund_amount_exceeds_remaining", message: "too much" };
    const e = await refusal(createRefund(deps, tenant, body));
    expect(e.code).toBe("refund_amount_exceeds_remaining");
    expect(e.extra?.["refund"]).toMatchObject({ status: "failed", failure_code: "refund_amount_exceeds_remaining" });
    const [row] = deps.store.refunds.values();
    expect(row).toMatchObject({ status: "failed", failure_code: "refund_amount_exceeds_remaining", failure_reason: "too much" });
    expect(deps.store.events).toEqual([]);
    // The failure is final for this request: a replay answers it again without asking the ledger.
    deps.ledger.behaviour = { kind: "post" };
    expect((await refusal(createRefund(deps, tenant, body))).code).toBe("refund_amount_exceeds_remaining");
    expect(deps.ledger.posts).toHaveLength(1);
  });

  it("a refusal that is not definitive leaves the refund pending", async () => {
    const deps = fakeDeps();
    deps.ledger.behaviour = { kind: "refuse", code: "internal_error" };
    expect((await refusal(createRefund(deps, tenant, body))).code).toBe("internal_error");
    expect([...deps.store.refunds.values()].map((r) => r.status)).toEqual(["pending"]);
  });

  it("a ledger that does not answer leaves the refund pending (service_timeout); the reconciler completes it once, later", async () => {
    const deps = fakeDeps();
    deps.ledger.behaviour = { kind: "silent" };
    expect((await refusal(createRefund(deps, tenant, body))).code).toBe("service_timeout");
    const [pending] = deps.store.refunds.values();
    expect(pending?.status).toBe("pending");
    expect(deps.store.events).toEqual([]);
    expect(await reconcilePass(deps, { graceMs: 0, batchMax: 10 })).toBe(0);
    deps.ledger.behaviour = { kind: "post" };
    expect(await reconcilePass(deps, { graceMs: 0, batchMax: 10 })).toBe(1);
    expect(deps.store.refunds.get(pending?.id ?? "")?.status).toBe("completed");
    expect(await reconcilePass(deps, { graceMs: 0, batchMax: 10 })).toBe(0);
    expect(deps.store.eventTypes()).toEqual(["refund.created", "sale.refunded"]);
  });

  it("a replay answers the first refund (idempotent), moving no money again; a pending one is driven first", async () => {
    const deps = fakeDeps();
    const first = await createRefund(deps, tenant, body);
    const again = await createRefund(deps, tenant, body);
    expect(again).toEqual({ refund: first.refund, replayed: true });
    expect(deps.ledger.posts).toHaveLength(1);

    deps.ledger.behaviour = { kind: "silent" };
    const other = { ...body, idempotency_key: "k2" };
    expect((await refusal(createRefund(deps, tenant, other))).code).toBe("service_timeout");
    deps.ledger.behaviour = { kind: "post" };
    const driven = await createRefund(deps, tenant, other);
    expect(driven.replayed).toBe(true);
    expect(driven.refund.status).toBe("completed");
    expect(deps.store.refunds.size).toBe(2);
  });

  it("without an idempotency_key, the same sale, amount and external id are the same refund", async () => {
    const deps = fakeDeps();
    const { idempotency_key: _key, ...keyless } = body;
    const first = await createRefund(deps, tenant, keyless);
    const again = await createRefund(deps, tenant, { ...keyless });
    expect(again.replayed).toBe(true);
    expect(again.refund.id).toBe(first.refund.id);
  });

  it("the same key (or external id) with a different request is duplicate_refund_reference, naming the existing refund", async () => {
    const deps = fakeDeps();
    const { refund } = await createRefund(deps, tenant, { ...body, external_refund_id: "ext_1" });
    const byKey = await refusal(createRefund(deps, tenant, { ...body, external_refund_id: "ext_1", amount: 100 }));
    expect(byKey.code).toBe("duplicate_refund_reference");
    expect(byKey.extra).toMatchObject({ existing_refund_id: refund.id, refund: { id: refund.id } });
    const byExternalId = await refusal(createRefund(deps, tenant, { ...body, idempotency_key: "k9", external_refund_id: "ext_1", reason: "other" }));
    expect(byExternalId.code).toBe("duplicate_refund_reference");
    expect(deps.ledger.posts).toHaveLength(1);
    expect(deps.store.refunds.size).toBe(1);
  });

  it("tenants do not share keys: the same key in another org is a refund of its own", async () => {
    const deps = fakeDeps();
    const sandbox = await createRefund(deps, tenant, body);
    const otherOrg = await createRefund(deps, { orgId: "org_b", livemode: false }, body);
    expect(otherOrg.replayed).toBe(false);
    expect(otherOrg.refund.id).not.toBe(sandbox.refund.id);
  });
});
