// Proves the dispute steps over in-memory ports: an opened dispute holds the creator's share (at most what is
// available) and reports dispute.created; a hold the creator's balance no longer covers is planned again, smaller;
// a ledger that does not answer leaves the dispute `opening` for the reconciler; a lost dispute releases the hold,
// takes the disputed amount back (cut to what remains of the sale) and books the fee, each once.
import { DomainError } from "@treasury/contracts";
import { describe, expect, it } from "vitest";
import { closeDispute, openDispute, type ProcessorDispute } from "../src/usecases/disputes.ts";
import { completeCheckout } from "../src/usecases/complete-checkout.ts";
import { createCheckoutSession } from "../src/usecases/create-checkout.ts";
import { reconcilePass } from "../src/usecases/reconcile.ts";
import { fakes, TENANT, type Fakes } from "./fakes.ts";

/** A completed sale of 2,000 cents (creator 50 %) paid through the processor as pi_1, the creator with `available` cents. */
async function sale(available: number): Promise<Fakes & { creatorWallet: string; checkoutId: string }> {
  const f = fakes();
  const p = f.ledger.addParticipant("creator_1", { split: 50, available });
  const res = await createCheckoutSession(f.deps, TENANT, { participant_id: "creator_1", amount: 2_000 }, "http://alt.test");
  const id = String(res.checkoutSession["id"]);
  await completeCheckout(f.deps, TENANT, id, { source: "processor", processor: { sessionId: "cs_1", paymentIntent: "pi_1", charge: "ch_1", fee: 0 } });
  return { ...f, creatorWallet: p.wallet_id, checkoutId: id };
}

const disputed = (over: Partial<ProcessorDispute> = {}): ProcessorDispute => ({
  id: "dp_1",
  amount: 2_000,
  paymentIntent: "pi_1",
  charge: "ch_1",
  reason: "fraudulent",
  status: "needs_response",
  fee: 1_500,
  ...over,
});

const holdsAsked = (f: Fakes) => f.ledger.asked.filter((r) => r.kind === "dispute_hold").map((r) => r.holds_create?.[0]?.amount);

describe("openDispute", () => {
  it("holds the creator's share of the disputed amount, at most what is available, and reports dispute.created", async () => {
    const f = await sale(600);
    expect(await openDispute(f.deps, disputed(), false)).toMatch(/^dispute dsp_\w+ open$/);
    const [row] = f.disputes.rows.values();
    expect(row).toMatchObject({ status: "open", amount: 2_000, hold_amount: 600, sale_reference: `checkout:${f.checkoutId}` });
    expect(holdsAsked(f)).toEqual([600]);
    expect(row?.hold_id).toBe(f.ledger.movements("dispute_hold")[0]?.holds_created[0]?.hold_id);
    expect(f.disputes.events.map((e) => e.type)).toEqual(["dispute.created"]);
  });

  it("plans the hold again, smaller, when the creator's balance moved under it", async () => {
    const f = await sale(600);
    // The hold is planned at 600; by the time it is posted the creator has 400 left.
    const getWallet = f.ledger.getWallet.bind(f.ledger);
    let reads = 0;
    f.ledger.getWallet = async (t, id) => {
      const w = await getWallet(t, id);
      return ++reads === 1 ? w : { ...w, available_balance: 400 };
    };
    f.ledger.next(new DomainError("insufficient_balance", "The creator's available balance is 400"));
    await openDispute(f.deps, disputed(), false);
    expect(holdsAsked(f)).toEqual([600, 400]);
    expect([...f.disputes.rows.values()][0]).toMatchObject({ status: "open", hold_amount: 400 });
    expect(f.ledger.movements("dispute_hold")).toHaveLength(1);
    expect(f.disputes.events.map((e) => e.type)).toEqual(["dispute.created"]);
  });

  it("leaves the dispute opening when the ledger does not answer; the reconciler places the hold once", async () => {
    const f = await sale(1_000);
    f.ledger.next("unanswered");
    const err = await openDispute(f.deps, disputed(), false).catch((e: unknown) => e);
    expect((err as DomainError).code).toBe("service_timeout");
    const [row] = f.disputes.rows.values();
    expect(row?.status).toBe("opening");
    expect(f.disputes.events).toHaveLength(0);
    expect(await reconcilePass(f.deps, { graceMs: 0, batchMax: 10 }, f.deps.log)).toBe(1);
    expect(f.disputes.rows.get(row?.id ?? "")?.status).toBe("open");
    expect(f.ledger.movements("dispute_hold")).toHaveLength(1);
    expect(f.disputes.events.map((e) => e.type)).toEqual(["dispute.created"]);
  });

  it("acts on no payment of ours and no report of the other environment", async () => {
    const f = await sale(1_000);
    expect(await openDispute(f.deps, disputed({ paymentIntent: "pi_other", charge: null }), false)).toBe("dispute dp_1 is not of one of our sales");
    expect(await openDispute(f.deps, disputed(), true)).toMatch(/^dropped \(livemode_mismatch\)/);
    expect(f.disputes.rows.size).toBe(0);
    expect(f.ledger.movements("dispute_hold")).toHaveLength(0);
  });
});

describe("closeDispute", () => {
  it("on a lost dispute releases the hold, takes the disputed amount back and books the fee, each once", async () => {
    const f = await sale(1_000);
    await openDispute(f.deps, disputed(), false);
    expect(await closeDispute(f.deps, disputed({ status: "lost" }), false)).toMatch(/ lost$/);
    const [row] = f.disputes.rows.values();
    expect(row).toMatchObject({ status: "lost", outcome: "lost", refund_amount: 2_000, fee: 1_500 });
    expect(f.ledger.movements("dispute_release")[0]?.transaction_id).toBe(row?.release_transaction_id);
    expect(f.ledger.asked.find((r) => r.kind === "refund")).toMatchObject({
      reference_id: `dispute:${row?.id ?? ""}`,
      refund: { sale_reference: `checkout:${f.checkoutId}`, amount: 2_000, refund_from: "both" },
    });
    expect(f.ledger.asked.find((r) => r.kind === "dispute_fee")?.postings).toEqual([
      { debit: { system: "processing_fees" }, credit: { system: "platform_cash" }, amount: 1_500 },
    ]);
    expect(f.disputes.events.map((e) => e.type)).toEqual(["dispute.created", "dispute.closed"]);
    // Closed again (a redelivery): nothing moves.
    const posts = f.ledger.asked.length;
    await closeDispute(f.deps, disputed({ status: "lost" }), false);
    expect(f.ledger.asked).toHaveLength(posts);
  });

  it("cuts the refund to what remains of a sale refunded meanwhile, and records a hold released by hand", async () => {
    const f = await sale(1_000);
    await openDispute(f.deps, disputed(), false);
    f.ledger.next(
      new DomainError("hold_already_released", "Released by an operator"),
      new DomainError("refund_amount_exceeds_remaining", "Only 500 remains", { extra: { remaining_amount: 500 } }),
    );
    await closeDispute(f.deps, disputed({ status: "lost" }), false);
    const [row] = f.disputes.rows.values();
    expect(row).toMatchObject({ status: "lost", release_transaction_id: "released_elsewhere", refund_amount: 500 });
    expect(f.ledger.asked.filter((r) => r.kind === "refund").map((r) => r.refund?.amount)).toEqual([2_000, 500]);
    expect(f.ledger.movements("refund")).toHaveLength(1);
  });

  it("on a won dispute releases the hold and takes nothing back", async () => {
    const f = await sale(1_000);
    await openDispute(f.deps, disputed(), false);
    await closeDispute(f.deps, disputed({ status: "won" }), false);
    expect([...f.disputes.rows.values()][0]).toMatchObject({ status: "won", refund_transaction_id: null, fee_transaction_id: null });
    expect(f.ledger.movements("dispute_release")).toHaveLength(1);
    expect(f.ledger.movements("refund")).toHaveLength(0);
  });
});
