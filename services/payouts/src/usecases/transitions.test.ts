// The transitions of a filed live payout with fakes behind their ports: a bank return fails the payout and gives
// the wallet its money back, a settlement pays it, and a ledger that does not answer leaves the action in flight.
import { cents, DomainError } from "@treasury/contracts";
import { LedgerOutcomeUnknown } from "@treasury/service-kit";
import { describe, expect, it } from "vitest";
import { fakes, posted, type Fakes } from "../../test/fakes.ts";
import type { PayoutRow } from "../domain/records.ts";
import { driveAction } from "./transitions.ts";

const WALLET = "00000000-0000-4000-8000-000000000001";

/** A live payout in a delivered file: its money left the wallet at its request. */
function filedPayout(f: Fakes, extra: Partial<PayoutRow> = {}): PayoutRow {
  const at = new Date(Date.UTC(2026, 10, 20));
  const row: PayoutRow = {
    id: "po_filed1",
    risk_evaluation_id: null,
    org_id: "org_a",
    livemode: true,
    participant_id: "creator_1",
    requested_wallet_id: null,
    wallet_id: WALLET,
    reference_id: "ref_1",
    request_hash: "h",
    reference_type: null,
    description: null,
    payout_method: null,
    metadata: {},
    amount: cents(1000),
    fees: cents(100),
    fees_paid_by: "creator",
    net_amount: cents(900),
    rail: "bank_ach",
    status: "processing",
    ledger_reference: "payout:po_filed1",
    transaction_id: "txn_1",
    previous_balance: cents(5000),
    new_balance: cents(4000),
    refusal_code: null,
    dest_routing_number: "011000015",
    dest_account_type: "checking",
    dest_last4: "6789",
    dest_sealed: "sealed",
    ach_file_id: "1",
    trace_number: "091000010000001",
    bank_transfer_status: "submitted",
    action: null,
    action_at: null,
    return_from: null,
    return_code: null,
    return_fee: cents(0),
    failure_reason: null,
    settle_transaction_id: null,
    return_transaction_id: null,
    created_at: at,
    updated_at: at,
    processing_at: at,
    paid_at: null,
    failed_at: null,
    ...extra,
  };
  f.payouts.seed(row);
  return row;
}

describe("driveAction", () => {
  it("a return: the wallet gets the whole amount back under payout:<id>:return, the payout fails with the code's reason", async () => {
    const f = fakes();
    filedPayout(f);
    const marked = await f.deps.payouts.markAction("po_filed1", "return", ["processing", "paid"], { return_code: "R03", return_from: "payouts_in_transit" });
    if (marked === undefined) throw new Error("the return did not start");
    const done = await driveAction(f.deps, marked);
    expect(done).toMatchObject({
      status: "failed",
      action: null,
      bank_transfer_status: "returned",
      failure_reason: "R03: No account or unable to locate account",
    });
    expect(done.return_transaction_id).toBe("txn_payoutpofiled1return");
    expect(f.ledger.posts).toEqual([
      expect.objectContaining({
        kind: "payout_return",
        reference_id: "payout:po_filed1:return",
        postings: [
          { debit: { system: "payouts_in_transit" }, credit: { wallet_id: WALLET }, amount: 900 },
          { debit: { system: "platform_revenue" }, credit: { wallet_id: WALLET }, amount: 100 },
        ],
      }),
    ]);
    expect(f.payouts.events.map((e) => [e.type, e.payload.data["status"], e.payload.data["failure_reason"]])).toEqual([
      ["payout.failed", "failed", "R03: No account or unable to locate account"],
    ]);
  });

  it("a settlement: payouts in transit to platform cash under payout:<id>:settle, and the payout is paid", async () => {
    const f = fakes();
    filedPayout(f);
    const marked = await f.deps.payouts.markAction("po_filed1", "settle", ["processing"]);
    if (marked === undefined) throw new Error("the settlement did not start");
    const done = await driveAction(f.deps, marked);
    expect(done).toMatchObject({ status: "paid", bank_transfer_status: "settled", settle_transaction_id: "txn_payoutpofiled1settle" });
    expect(f.ledger.posts.map((p) => [p.kind, p.reference_id, p.postings])).toEqual([
      ["payout_settlement", "payout:po_filed1:settle", [{ debit: { system: "payouts_in_transit" }, credit: { system: "platform_cash" }, amount: 900 }]],
    ]);
    expect(f.payouts.events.map((e) => e.type)).toEqual(["payout.executed"]);
  });

  it("a ledger that does not answer: service_timeout, the return stays in flight, and driving it again finishes it once", async () => {
    const f = fakes();
    filedPayout(f, { status: "paid", bank_transfer_status: "settled" });
    const marked = await f.deps.payouts.markAction("po_filed1", "return", ["processing", "paid"], { return_code: "R02", return_from: "platform_cash" });
    if (marked === undefined) throw new Error("the return did not start");
    f.ledger.answer = () => new LedgerOutcomeUnknown("service_timeout");
    await expect(driveAction(f.deps, marked)).rejects.toMatchObject({ code: "service_timeout" });
    expect(f.payouts.rows.get("po_filed1")).toMatchObject({ status: "paid", action: "return" });
    expect(f.payouts.events).toEqual([]);

    f.ledger.answer = (req) => posted(req, undefined);
    expect(await driveAction(f.deps, marked)).toMatchObject({ status: "failed", failure_reason: "R02: Account closed" });
    expect(f.ledger.posts.map((p) => p.reference_id)).toEqual(["payout:po_filed1:return", "payout:po_filed1:return"]);
    expect(f.ledger.posts[1]?.postings?.[0]).toEqual({ debit: { system: "platform_cash" }, credit: { wallet_id: WALLET }, amount: 900 });
  });

  it("a ledger refusal propagates as it is and leaves the action in flight", async () => {
    const f = fakes();
    filedPayout(f);
    const marked = await f.deps.payouts.markAction("po_filed1", "settle", ["processing"]);
    if (marked === undefined) throw new Error("the settlement did not start");
    f.ledger.answer = () => new DomainError("wallet_not_active", "frozen");
    await expect(driveAction(f.deps, marked)).rejects.toMatchObject({ code: "wallet_not_active" });
    expect(f.payouts.rows.get("po_filed1")).toMatchObject({ status: "processing", action: "settle" });
  });
});
