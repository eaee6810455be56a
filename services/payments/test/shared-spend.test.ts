// Proves shared-wallet spend and its reversal over in-memory ports: one ledger post charges the buyer's wallet and
// posts the split (recorded after the ledger answered), a replayed reference is duplicate_reference_id with the
// first spend, a ledger that does not answer records nothing (service_timeout); a reversal records its intent before
// the post, a second reversal is refused with the first, and one left `reversing` is finished by the reconciler once.
import { DomainError } from "@treasury/contracts";
import { describe, expect, it } from "vitest";
import { driveStuckReversals, reverseSharedWalletSpend, spendSharedWallet } from "../src/usecases/shared-spend.ts";
import { fakes, TENANT, type Fakes } from "./fakes.ts";

const AUTH = { org_id: TENANT.orgId, livemode: TENANT.livemode, key_id: "key_unit", scopes: null, request_id: "req_unit" };

function setUp(): Fakes & { walletId: string } {
  const f = fakes();
  f.ledger.addParticipant("creator_1", { split: 60 });
  const wallet = f.ledger.addWallet({ owner_id: "sub_1", available_balance: 10_000 });
  return { ...f, walletId: wallet.id };
}

const spendBody = { consumer_sub: "sub_1", amount: 1_000, reference_id: "spend_1", creator_id: "creator_1", sales_tax: 100 };

describe("spendSharedWallet", () => {
  it("charges the buyer's wallet for the split in one post and records the spend", async () => {
    const f = setUp();
    const spend = await spendSharedWallet(f.deps, TENANT, spendBody);
    const [req] = f.ledger.asked;
    expect(req).toMatchObject({ kind: "shared_spend", reference_id: "spend_1", preconditions: [{ wallet: { wallet_id: f.walletId }, available_gte: 1_000 }] });
    // 60 % of the net 900 to the creator, the rest of it to the platform, the tax to the tax account.
    expect(req?.postings).toEqual([
      { debit: { wallet_id: f.walletId }, credit: { participant_id: "creator_1" }, amount: 540 },
      { debit: { wallet_id: f.walletId }, credit: { system: "platform_revenue" }, amount: 360 },
      { debit: { wallet_id: f.walletId }, credit: { system: "sales_tax_payable" }, amount: 100 },
    ]);
    const txn = f.ledger.movements("shared_spend")[0]?.transaction_id;
    expect(spend).toMatchObject({ consumer_transaction_id: txn, platform_transaction_id: txn, creator_amount_cents: 540, creator_percent: 60 });
    expect(f.spends.spends).toEqual([expect.objectContaining({ reference_id: "spend_1", transaction_id: txn, creator_amount: 540, status: "settled" })]);
  });

  it("answers a replayed reference with duplicate_reference_id and the first spend, moving money once", async () => {
    const f = setUp();
    const first = await spendSharedWallet(f.deps, TENANT, spendBody);
    const replay = await spendSharedWallet(f.deps, TENANT, spendBody).catch((e: unknown) => e);
    expect(replay).toBeInstanceOf(DomainError);
    expect((replay as DomainError).code).toBe("duplicate_reference_id");
    expect((replay as DomainError).extra?.["spend"]).toEqual(first);
    expect(f.ledger.movements("shared_spend")).toHaveLength(1);
    expect(f.spends.spends).toHaveLength(1);
  });

  it("records nothing and answers service_timeout when the ledger does not answer; the same reference then reads the outcome", async () => {
    const f = setUp();
    f.ledger.next("lost-answer");
    const err = await spendSharedWallet(f.deps, TENANT, spendBody).catch((e: unknown) => e);
    expect((err as DomainError).code).toBe("service_timeout");
    expect(f.spends.spends).toHaveLength(0);
    // The money did move: the retry is the ledger's replay, recorded now and answered as a duplicate.
    const again = await spendSharedWallet(f.deps, TENANT, spendBody).catch((e: unknown) => e);
    expect((again as DomainError).code).toBe("duplicate_reference_id");
    expect(f.spends.spends).toHaveLength(1);
    expect(f.ledger.movements("shared_spend")).toHaveLength(1);
  });

  it("passes a ledger refusal through, recording nothing", async () => {
    const f = setUp();
    f.ledger.next(new DomainError("insufficient_balance", "The wallet cannot cover 1000"));
    const err = await spendSharedWallet(f.deps, TENANT, spendBody).catch((e: unknown) => e);
    expect((err as DomainError).code).toBe("insufficient_balance");
    expect(f.spends.spends).toHaveLength(0);
  });
});

describe("reverseSharedWalletSpend", () => {
  async function spent(f: Fakes): Promise<string> {
    const spend = await spendSharedWallet(f.deps, TENANT, spendBody);
    return String(spend["platform_transaction_id"]);
  }

  it("records the intent, posts the refund of the spend's sale once, and refuses a second reversal with the first", async () => {
    const f = setUp();
    const txn = await spent(f);
    const reversal = await reverseSharedWalletSpend(f.deps, TENANT, AUTH, { sale_transaction_id: txn, reason: "duplicate charge" });
    const refund = f.ledger.asked.find((r) => r.kind === "refund");
    expect(refund).toMatchObject({ reference_id: `shared_spend_reversal:${txn}`, refund: { sale_reference: "shared_spend:spend_1", refund_from: "both" } });
    expect(reversal).toMatchObject({ sale_transaction_id: txn, status: "reversed", reason: "duplicate charge" });
    expect(f.spends.reversals[0]).toMatchObject({ status: "reversed", reason: "duplicate charge" });
    expect(f.spends.spends[0]?.status).toBe("reversed");
    const again = await reverseSharedWalletSpend(f.deps, TENANT, AUTH, { sale_transaction_id: txn }).catch((e: unknown) => e);
    expect((again as DomainError).code).toBe("duplicate_reversal_reference");
    expect(f.ledger.movements("refund")).toHaveLength(1);
  });

  it("leaves a reversal whose ledger answer was lost `reversing`, and the reconciler finishes it once", async () => {
    const f = setUp();
    const txn = await spent(f);
    f.ledger.next("lost-answer");
    const err = await reverseSharedWalletSpend(f.deps, TENANT, AUTH, { sale_transaction_id: txn }).catch((e: unknown) => e);
    expect((err as DomainError).code).toBe("service_timeout");
    expect(f.spends.reversals[0]?.status).toBe("reversing");
    expect(f.spends.spends[0]?.status).toBe("reversing");
    expect(await driveStuckReversals(f.deps, 0, 10, f.deps.log)).toBe(1);
    expect(f.spends.reversals[0]?.status).toBe("reversed");
    expect(f.ledger.movements("refund")).toHaveLength(1);
  });

  it("refuses a transaction that is no shared spend", async () => {
    const f = setUp();
    const err = await reverseSharedWalletSpend(f.deps, TENANT, AUTH, { sale_transaction_id: "txn_none" }).catch((e: unknown) => e);
    expect((err as DomainError).code).toBe("transaction_not_found");
    expect(f.spends.reversals).toHaveLength(0);
  });
});
