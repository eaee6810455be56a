// Proves how a refund request is built against in-memory ports: its shape is checked before any read, the plan
// names the sale's source (the account its inflow postings debited), the creator's wallet, hold and receivable and
// the platform's accounts with their normal sides, and a sale's second refund reads nothing before posting.
import { cents, PostRequest } from "@treasury/contracts";
import { beforeEach, describe, expect, it } from "vitest";
import { FakeLedger, refusalOf, saleRow, TENANT, transactionRow, walletRow } from "./fakes.ts";
import { postRefund } from "./refund.ts";
import type { EntryRow } from "./rows.ts";

const CREATOR = "00000000-0000-4000-8000-0000000000c1";
const BUYER = "00000000-0000-4000-8000-0000000000b1";
let f: FakeLedger;

function entry(i: number, account: string, side: "debit" | "credit", amount: number): EntryRow {
  return { seq: i, id: `e${i}`, transaction_id: "txn_sale", account_id: account, entry_type: side, amount: cents(amount) };
}

/** A wallet-funded sale: the buyer's wallet paid 1,000 (800 to the creator, 200 revenue); the processor's fee is booked apart. */
beforeEach(() => {
  f = new FakeLedger();
  f.wallets.set(CREATOR, walletRow({ id: CREATOR, account_type: "creator_earnings", participant_id: "creator" }));
  f.wallets.set(BUYER, walletRow({ id: BUYER, owner_id: "buyer" }));
  f.transactions.set("txn_sale", transactionRow({ id: "txn_sale", amount: cents(1_000) }));
  f.sales.set(
    "s-1",
    saleRow({
      sale_reference: "s-1",
      transaction_id: "txn_sale",
      participant_id: "creator",
      gross: cents(1_000),
      creator_amount: cents(800),
      hold_id: "hold_1",
    }),
  );
  f.entries.set("txn_sale", [
    entry(0, "sys-processing_fees:", "debit", 30),
    entry(1, "sys-platform_cash:", "credit", 30),
    entry(2, BUYER, "debit", 800),
    entry(3, CREATOR, "credit", 800),
    entry(4, BUYER, "debit", 200),
    entry(5, "sys-platform_revenue:", "credit", 200),
  ]);
});

function refund(ref: string, extra: Record<string, unknown> = {}): PostRequest {
  return PostRequest.parse({
    org_id: TENANT.orgId,
    livemode: false,
    kind: "refund",
    reference_id: ref,
    refund: { sale_reference: "s-1", amount: 100 },
    ...extra,
  });
}

describe("postRefund", () => {
  it("posts the request with the sale's plan: its source, the creator's wallet, hold and receivable, the platform's accounts", async () => {
    await postRefund(f.deps(), refund("r-1"));
    const posted = f.posted[0];
    expect(posted?.request.reference_id).toBe("r-1");
    expect(posted?.hooks?.refund).toEqual({
      orgId: TENANT.orgId,
      livemode: false,
      saleReference: "s-1",
      saleTransactionId: "txn_sale",
      participantId: "creator",
      sourceId: BUYER,
      creatorWalletId: CREATOR,
      holdId: "hold_1",
      receivableId: "sys-creator_receivable:creator",
      taxId: "sys-sales_tax_payable:",
      revenueId: "sys-platform_revenue:",
      systemNormals: [
        ["sys-sales_tax_payable:", "credit"],
        ["sys-platform_revenue:", "credit"],
        ["sys-creator_receivable:creator", "debit"],
      ],
    });
  });

  it("names a system source with its normal side, and no creator accounts for a sale without a creator", async () => {
    f.sales.set("s-1", saleRow({ sale_reference: "s-1", transaction_id: "txn_sale", gross: cents(1_000) }));
    f.entries.set("txn_sale", [entry(0, "sys-platform_cash:", "debit", 1_000), entry(1, "sys-platform_revenue:", "credit", 1_000)]);
    await f.deps().accounts.ensureSystem(TENANT, "platform_cash");
    await postRefund(f.deps(), refund("r-2"));
    expect(f.posted[0]?.hooks?.refund).toMatchObject({
      sourceId: "sys-platform_cash:",
      creatorWalletId: null,
      receivableId: null,
      systemNormals: [
        ["sys-sales_tax_payable:", "credit"],
        ["sys-platform_revenue:", "credit"],
        ["sys-platform_cash:", "debit"],
      ],
    });
  });

  it("reads the sale once: a second refund of it posts without a read", async () => {
    const deps = f.deps();
    await postRefund(deps, refund("r-a"));
    const reads = f.calls.length;
    await postRefund(deps, refund("r-b"));
    expect(f.calls.length).toBe(reads);
    expect(f.posted.map((p) => p.hooks?.refund)).toEqual([f.posted[0]?.hooks?.refund, f.posted[0]?.hooks?.refund]);
  });

  it("refuses a request that carries postings, holds or another kind before reading anything, and an unknown sale", async () => {
    const postings = [{ debit: { system: "platform_cash" }, credit: { wallet_id: BUYER }, amount: 1 }];
    for (const bad of [
      refund("x", { postings }),
      refund("y", { kind: "sale" }),
      refund("z", { holds_create: [{ wallet: { wallet_id: BUYER }, amount: 1 }] }),
    ]) {
      const e = await refusalOf(postRefund(f.deps(), bad));
      expect(e.code).toBe("validation_error");
    }
    expect(f.calls).toEqual([]);
    const unknown = PostRequest.parse({ org_id: TENANT.orgId, livemode: false, kind: "refund", reference_id: "u", refund: { sale_reference: "nope" } });
    expect((await refusalOf(postRefund(f.deps(), unknown))).code).toBe("original_sale_not_found");
    expect(f.posted).toHaveLength(0);
  });
});
