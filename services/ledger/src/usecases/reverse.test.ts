// Proves reverse-transaction against in-memory ports: what it refuses before posting, what its extension does under
// the sale's lock (the sale's sides by the reversal arithmetic, the original marked, each posting taken back by its
// share, the creator's part covered), that partial reversals end where a full one does, and the answers to a replay.
import { cents } from "@treasury/contracts";
import { beforeEach, describe, expect, it } from "vitest";
import { codeOf, FakeLedger, refusalOf, saleRow, TENANT, transactionRow, walletRow } from "./fakes.ts";
import { reverseTransaction } from "./reverse.ts";
import type { EntryRow } from "./rows.ts";

const CREATOR = "00000000-0000-4000-8000-0000000000c1";
const CASH = "sys-platform_cash:";
let f: FakeLedger;

/** A sale of 10,000: 7,000 to the creator, 1,000 tax, 2,000 revenue, as the engine wrote its entries. */
function recordSale(): void {
  f.wallets.set(CREATOR, walletRow({ id: CREATOR, account_type: "creator_earnings", participant_id: "creator", balance: cents(7_000) }));
  f.transactions.set("txn_sale", transactionRow({ id: "txn_sale", kind: "sale", amount: cents(10_000) }));
  f.sales.set(
    "sale-1",
    saleRow({
      sale_reference: "sale-1",
      transaction_id: "txn_sale",
      participant_id: "creator",
      gross: cents(10_000),
      creator_amount: cents(7_000),
      sales_tax: cents(1_000),
      hold_id: "hold_sale",
    }),
  );
  const postings: [string, string, number][] = [
    [CASH, CREATOR, 7_000],
    [CASH, "sys-sales_tax_payable:", 1_000],
    [CASH, "sys-platform_revenue:", 2_000],
  ];
  f.entries.set(
    "txn_sale",
    postings.flatMap(([debit, credit, amount], i): EntryRow[] => [
      { seq: 2 * i, id: `e${2 * i}`, transaction_id: "txn_sale", account_id: debit, entry_type: "debit", amount: cents(amount) },
      { seq: 2 * i + 1, id: `e${2 * i + 1}`, transaction_id: "txn_sale", account_id: credit, entry_type: "credit", amount: cents(amount) },
    ]),
  );
}

beforeEach(() => {
  f = new FakeLedger();
  recordSale();
});

describe("reverseTransaction", () => {
  it("takes a partial amount back by each posting's share, sets the sale's sides and covers the creator's part", async () => {
    const res = await reverseTransaction(f.deps(), TENANT, { transaction_id: "txn_sale", partial_amount: 2_500, reason: "partial" });
    const posted = f.posted[0];
    expect(posted?.request).toMatchObject({ kind: "reversal", reference_id: "txn_sale:2500", description: "partial" });
    expect(posted?.derived?.postings).toEqual([
      { debit: CREATOR, credit: CASH, amount: 1_750 },
      { debit: "sys-sales_tax_payable:", credit: CASH, amount: 250 },
      { debit: "sys-platform_revenue:", credit: CASH, amount: 500 },
    ]);
    expect(posted?.derived?.cover).toEqual({ walletId: CREATOR, holdId: "hold_sale", receivableId: "sys-creator_receivable:creator", reason: "reversal" });
    expect(f.txWrites).toEqual([
      { op: "sales.updateRemainder", args: ["sale-1", { refunded: 2_500, creatorRefunded: 1_750, platformRefunded: 750, reversed: false }] },
      { op: "transactions.markReversal", args: ["txn_1", "txn_sale", 2_500, false] },
    ]);
    expect(res).toMatchObject({ amount: 2_500, reversed_transaction_id: "txn_sale", status: "partially_reversed", is_partial: true, remaining_amount: 7_500 });
  });

  it("ends, after partial reversals of any sizes, exactly where one full reversal does", async () => {
    for (const [i, part] of [3_333, 3_333].entries())
      await reverseTransaction(f.deps(), TENANT, { reason: "test", transaction_id: "txn_sale", partial_amount: part, idempotency_key: `p${i}` });
    const rest = await reverseTransaction(f.deps(), TENANT, { reason: "test", transaction_id: "txn_sale", idempotency_key: "rest" });
    expect(rest).toMatchObject({ amount: 3_334, status: "reversed", remaining_amount: 0 });
    const taken = new Map<string, number>();
    for (const p of f.posted.flatMap((x) => x.derived?.postings ?? [])) taken.set(p.debit, (taken.get(p.debit) ?? 0) + p.amount);
    expect(Object.fromEntries(taken)).toEqual({ [CREATOR]: 7_000, "sys-sales_tax_payable:": 1_000, "sys-platform_revenue:": 2_000 });
    expect(f.sales.get("sale-1")).toMatchObject({ refunded_amount: 10_000, creator_refunded: 7_000, platform_refunded: 3_000, reversed: true });
    expect(f.transactions.get("txn_sale")).toMatchObject({ status: "reversed", reversed_amount: 10_000 });
    expect(await codeOf(reverseTransaction(f.deps(), TENANT, { reason: "test", transaction_id: "txn_sale", idempotency_key: "more" }))).toBe(
      "duplicate_reversal_reference",
    );
  });

  it("refuses before posting: an unknown transaction, a reversal, one that moved nothing", async () => {
    f.transactions.set("txn_rev", transactionRow({ id: "txn_rev", kind: "reversal" }));
    f.transactions.set("txn_empty", transactionRow({ id: "txn_empty", kind: "expense" }));
    expect(await codeOf(reverseTransaction(f.deps(), TENANT, { reason: "test", transaction_id: "txn_none" }))).toBe("transaction_not_found");
    expect(await codeOf(reverseTransaction(f.deps(), TENANT, { reason: "test", transaction_id: "txn_rev" }))).toBe("validation_error");
    expect(await codeOf(reverseTransaction(f.deps(), TENANT, { reason: "test", transaction_id: "txn_empty" }))).toBe("validation_error");
    expect(f.posted).toHaveLength(0);
  });

  it("refuses more than remains, under the sale's lock, with the remaining amount", async () => {
    await reverseTransaction(f.deps(), TENANT, { reason: "test", transaction_id: "txn_sale", partial_amount: 9_000 });
    const e = await refusalOf(reverseTransaction(f.deps(), TENANT, { reason: "test", transaction_id: "txn_sale", partial_amount: 1_001 }));
    expect([e.code, e.extra?.["remaining_amount"]]).toEqual(["reversal_amount_exceeds_remaining", 1_000]);
  });

  it("answers a replay with duplicate_reversal_reference and the first reversal", async () => {
    const first = await reverseTransaction(f.deps(), TENANT, { reason: "test", transaction_id: "txn_sale", partial_amount: 100 });
    const e = await refusalOf(reverseTransaction(f.deps(), TENANT, { reason: "test", transaction_id: "txn_sale", partial_amount: 100 }));
    expect(e.code).toBe("duplicate_reversal_reference");
    expect(e.extra?.["reversal"]).toEqual(first);
    expect(f.posted).toHaveLength(1);
  });

  it("gives a reversed refund's parts back to its sale, and refuses to reverse a refund in part", async () => {
    f.sales.set("sale-1", {
      ...(f.sales.get("sale-1") ?? saleRow({ sale_reference: "", transaction_id: "" })),
      refunded_amount: cents(1_000),
      creator_refunded: cents(700),
      platform_refunded: cents(300),
    });
    f.transactions.set(
      "txn_refund",
      transactionRow({
        id: "txn_refund",
        kind: "refund",
        amount: cents(1_000),
        result: { extra: { refund: { sale_reference: "sale-1", amount: 1_000, from_creator: 700, from_platform: 300 } } },
      }),
    );
    f.entries.set("txn_refund", [
      { seq: 0, id: "r0", transaction_id: "txn_refund", account_id: CREATOR, entry_type: "debit", amount: cents(700) },
      { seq: 1, id: "r1", transaction_id: "txn_refund", account_id: CASH, entry_type: "credit", amount: cents(700) },
    ]);
    expect(await codeOf(reverseTransaction(f.deps(), TENANT, { reason: "test", transaction_id: "txn_refund", partial_amount: 500 }))).toBe("validation_error");
    await reverseTransaction(f.deps(), TENANT, { reason: "test", transaction_id: "txn_refund" });
    expect(f.sales.get("sale-1")).toMatchObject({ refunded_amount: 0, creator_refunded: 0, platform_refunded: 0, reversed: false });
    expect(f.posted[0]?.derived?.cover).toBeUndefined();
  });
});
