// Proves checkout completion (intent → ledger post → settle) over in-memory ports: success settles once with
// `checkout.completed`; a definitive ledger refusal fails the session with `checkout.failed`; a ledger that does
// not answer leaves the session `completing` (service_timeout) for the reconciler, which moves the money once; a
// replay answers the first result without a second movement; the crash point sits between the post and the settle.
import { DomainError } from "@treasury/contracts";
import { describe, expect, it } from "vitest";
import { completeCheckout } from "../src/usecases/complete-checkout.ts";
import { createCheckoutSession } from "../src/usecases/create-checkout.ts";
import { failCheckout } from "../src/usecases/fail-checkout.ts";
import { reconcilePass } from "../src/usecases/reconcile.ts";
import { fakes, TENANT, type Fakes } from "./fakes.ts";

/** A pending hosted session of 2,000 cents (creator 50 %). */
async function pending(f: Fakes, body: Record<string, unknown> = {}): Promise<string> {
  if (!f.ledger.participants.has("creator_1")) f.ledger.addParticipant("creator_1", { split: 50 });
  const res = await createCheckoutSession(f.deps, TENANT, { participant_id: "creator_1", amount: 2_000, ...body }, "http://alt.test");
  return String(res.checkoutSession["id"]);
}

const sandbox = { source: "sandbox_api" as const };

describe("completeCheckout", () => {
  it("posts the sale once and settles the session with checkout.completed", async () => {
    const f = fakes();
    const id = await pending(f, { hold_funds: true });
    const done = await completeCheckout(f.deps, TENANT, id, { source: "sandbox_api", sandboxIdempotencyKey: "k1" });
    expect(done).toMatchObject({ status: "completed", ledger_reference: `checkout:${id}`, completion_source: "sandbox_api", sandbox_idempotency_key: "k1" });
    const [sale] = f.ledger.movements("checkout_sale");
    expect(done.sale_transaction_id).toBe(sale?.transaction_id);
    expect(done.hold_id).toBe(sale?.holds_created[0]?.hold_id);
    expect(f.ledger.asked[0]?.sale).toMatchObject({ sale_reference: `checkout:${id}`, gross: 2_000, creator_amount: 1_000, hold_index: 0 });
    expect(f.checkouts.events).toHaveLength(1);
    expect(f.checkouts.events[0]).toMatchObject({
      type: "checkout.completed",
      data: { checkout_session_id: id, sale_transaction_id: sale?.transaction_id, creator_amount_cents: 1_000, sandbox_idempotency_key: "k1" },
    });
    expect(f.steps).toEqual(["post:checkout_sale", "afterLedgerPost"]);
  });

  it("fails the session with checkout.failed when the ledger refuses for good, and answers the refusal", async () => {
    const f = fakes();
    const id = await pending(f);
    f.ledger.next(new DomainError("insufficient_balance", "The buyer's wallet cannot cover 2000"));
    const refused = await completeCheckout(f.deps, TENANT, id, sandbox).catch((e: unknown) => e);
    expect((refused as DomainError).code).toBe("insufficient_balance");
    expect(f.checkouts.rows.get(id)).toMatchObject({ status: "failed", failure_code: "insufficient_balance" });
    expect(f.checkouts.events.map((e) => e.type)).toEqual(["checkout.failed"]);
    expect(f.steps).toEqual(["post:checkout_sale"]);
    // A failed session is not completed by a later attempt.
    const again = await completeCheckout(f.deps, TENANT, id, sandbox).catch((e: unknown) => e);
    expect((again as DomainError).code).toBe("checkout_not_pending");
    expect(f.ledger.asked).toHaveLength(1);
  });

  it("leaves a refusal that may pass later (not definitive) in completing, without an event", async () => {
    const f = fakes();
    const id = await pending(f);
    f.ledger.next(new DomainError("idempotency_conflict", "The reference was used with another request"));
    const err = await completeCheckout(f.deps, TENANT, id, sandbox).catch((e: unknown) => e);
    expect((err as DomainError).code).toBe("idempotency_conflict");
    expect(f.checkouts.rows.get(id)?.status).toBe("completing");
    expect(f.checkouts.events).toHaveLength(0);
  });

  it("answers service_timeout and leaves the intent pending when the ledger's answer is lost; the reconciler settles it once", async () => {
    const f = fakes();
    const id = await pending(f);
    f.ledger.next("lost-answer");
    const err = await completeCheckout(f.deps, TENANT, id, sandbox).catch((e: unknown) => e);
    expect((err as DomainError).code).toBe("service_timeout");
    expect(f.checkouts.rows.get(id)?.status).toBe("completing");
    expect(f.checkouts.events).toHaveLength(0);
    expect(f.steps).toEqual(["post:checkout_sale"]);

    expect(await reconcilePass(f.deps, { graceMs: 0, batchMax: 10 }, f.deps.log)).toBe(1);
    const row = f.checkouts.rows.get(id);
    expect(row?.status).toBe("completed");
    // The retry was a replay of the same request: the money moved once.
    expect(f.ledger.asked.map((r) => r.reference_id)).toEqual([`checkout:${id}`, `checkout:${id}`]);
    expect(f.ledger.movements("checkout_sale")).toHaveLength(1);
    expect(row?.sale_transaction_id).toBe(f.ledger.movements("checkout_sale")[0]?.transaction_id);
    expect(f.checkouts.events.map((e) => e.type)).toEqual(["checkout.completed"]);
  });

  it("answers a replay with the first result: a completed session is not posted again", async () => {
    const f = fakes();
    const id = await pending(f);
    const first = await completeCheckout(f.deps, TENANT, id, sandbox);
    const second = await completeCheckout(f.deps, TENANT, id, sandbox);
    expect(second).toMatchObject({ status: "completed", sale_transaction_id: first.sale_transaction_id });
    expect(f.ledger.asked).toHaveLength(1);
    expect(f.checkouts.events).toHaveLength(1);
  });

  it("finishes a session another driver left completing with the same request, settling once", async () => {
    const f = fakes();
    const id = await pending(f);
    f.ledger.next("unanswered");
    await completeCheckout(f.deps, TENANT, id, sandbox).catch(() => undefined);
    expect(f.ledger.movements("checkout_sale")).toHaveLength(0);
    const done = await completeCheckout(f.deps, TENANT, id, sandbox);
    expect(done.status).toBe("completed");
    expect(f.ledger.asked[0]).toEqual(f.ledger.asked[1]);
    expect(f.ledger.movements("checkout_sale")).toHaveLength(1);
    expect(f.checkouts.events).toHaveLength(1);
  });

  it("refuses an expired session and an unknown one, moving nothing", async () => {
    let now = new Date();
    const f = fakes({ now: () => now });
    const id = await pending(f);
    now = new Date(now.getTime() + 61 * 60_000);
    const expired = await completeCheckout(f.deps, TENANT, id, sandbox).catch((e: unknown) => e);
    expect((expired as DomainError).code).toBe("checkout_expired");
    const unknown = await completeCheckout(f.deps, TENANT, "00000000-0000-4000-8000-000000000000", sandbox).catch((e: unknown) => e);
    expect((unknown as DomainError).code).toBe("checkout_session_not_found");
    const otherTenant = await completeCheckout(f.deps, { ...TENANT, livemode: true }, id, sandbox).catch((e: unknown) => e);
    expect((otherTenant as DomainError).code).toBe("checkout_session_not_found");
    expect(f.ledger.asked).toHaveLength(0);
    expect(f.checkouts.rows.get(id)?.status).toBe("pending");
  });
});

describe("failCheckout", () => {
  it("fails a pending session with checkout.failed, and refuses one in flight or completed", async () => {
    const f = fakes();
    const a = await pending(f);
    expect(await failCheckout(f.deps, TENANT, a, "buyer left")).toMatchObject({ status: "failed", failure_reason: "buyer left" });
    expect(f.checkouts.events.map((e) => [e.type, e.data["checkout_session_id"]])).toEqual([["checkout.failed", a]]);

    const b = await pending(f);
    f.ledger.next("unanswered");
    await completeCheckout(f.deps, TENANT, b, sandbox).catch(() => undefined);
    const inFlight = await failCheckout(f.deps, TENANT, b, undefined).catch((e: unknown) => e);
    expect((inFlight as DomainError).code).toBe("checkout_in_progress");
    await completeCheckout(f.deps, TENANT, b, sandbox);
    const completed = await failCheckout(f.deps, TENANT, b, undefined).catch((e: unknown) => e);
    expect((completed as DomainError).code).toBe("checkout_not_pending");
    expect(f.checkouts.rows.get(b)?.status).toBe("completed");
  });
});
