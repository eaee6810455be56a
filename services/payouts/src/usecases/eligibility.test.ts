// Payout eligibility with fakes behind its ports: the facts come from the ledger, kyc and the bank accounts, and
// the rules of domain/eligibility.ts decide.
import { tenantOf } from "@treasury/contracts";
import { describe, expect, it } from "vitest";
import { fakes, type Fakes } from "../../test/fakes.ts";
import { checkEligibility } from "./eligibility.ts";

const SANDBOX = tenantOf({ org_id: "org_a", livemode: false });
const LIVE = tenantOf({ org_id: "org_a", livemode: true });

async function withBankAccount(f: Fakes): Promise<void> {
  const values = { routing_number: "011000015", account_type: "savings" as const, last4: "4321", sealed: "sealed", sealed_key_id: "t1" };
  await f.bankAccounts.save(LIVE, "creator_1", "ba_1", values, () => ({ type: "bank_account.updated", org_id: "org_a", livemode: true, data: {} }));
}

describe("checkEligibility", () => {
  it("sandbox needs only a positive available balance", async () => {
    const f = fakes();
    const wallet = f.ledger.addCreator("creator_1", 250);
    const e = await checkEligibility(f.deps, SANDBOX, "creator_1");
    expect(e).toMatchObject({ participant_id: "creator_1", eligible: true, issues: [], available_balance_cents: 250, wallet_id: wallet.id });
    expect(e.requirements.environment).toBe("sandbox");
    f.ledger.addCreator("creator_2", 0);
    expect(await checkEligibility(f.deps, SANDBOX, "creator_2")).toMatchObject({ eligible: false, issues: ["insufficient_balance"] });
  });

  it("live lists every requirement not met, from each service's facts", async () => {
    const f = fakes();
    f.ledger.addCreator("creator_1", 0, "frozen");
    const e = await checkEligibility(f.deps, LIVE, "creator_1");
    expect(e.eligible).toBe(false);
    expect(e.issues).toEqual([
      "kyc_not_approved",
      "tax_not_certified",
      "no_bank_account",
      "creator_access_inactive",
      "org_payouts_disabled",
      "insufficient_balance",
    ]);
    expect(e.requirements.creator_access_active).toEqual({ required: true, met: false, status: "frozen" });
  });

  it("live is eligible once the creator is verified and certified, has a bank account, and the org is approved", async () => {
    const f = fakes();
    f.ledger.addCreator("creator_1", 900);
    f.compliance.creators.set("creator_1", { status: "approved", tax_certified: true });
    f.compliance.business = "approved";
    await withBankAccount(f);
    const e = await checkEligibility(f.deps, LIVE, "creator_1");
    expect(e).toMatchObject({ eligible: true, issues: [] });
    expect(e.requirements.bank_account).toEqual({ required: true, met: true, last4: "4321", account_type: "savings", status: "active", disabled_reason: null });
    // A bank account of the other environment is not this one's.
    expect((await checkEligibility(f.deps, SANDBOX, "creator_1")).requirements.bank_account.met).toBe(false);
    // An amount above the balance is the one issue left.
    expect((await checkEligibility(f.deps, LIVE, "creator_1", 1000)).issues).toEqual(["insufficient_balance"]);
  });

  it("live counts a W-9 certified with the tax service as the tax certification the KYC submission lacks", async () => {
    const f = fakes();
    f.ledger.addCreator("creator_1", 900);
    f.compliance.creators.set("creator_1", { status: "approved", tax_certified: false });
    f.compliance.business = "approved";
    await withBankAccount(f);
    const before = await checkEligibility(f.deps, LIVE, "creator_1");
    expect(before).toMatchObject({ eligible: false, issues: ["tax_not_certified"] });
    f.compliance.w9.add("creator_1");
    const after = await checkEligibility(f.deps, LIVE, "creator_1");
    expect(after).toMatchObject({ eligible: true, issues: [] });
    expect(after.requirements.tax_certified).toMatchObject({ required: true, met: true });
    // A W-9 does not stand in for the identity check itself.
    f.compliance.creators.set("creator_1", { status: "pending", tax_certified: false });
    expect((await checkEligibility(f.deps, LIVE, "creator_1")).issues).toEqual(["kyc_not_approved", "tax_not_certified"]);
  });

  it("an unknown participant is the ledger's participant_not_found", async () => {
    const f = fakes();
    await expect(checkEligibility(f.deps, SANDBOX, "nobody")).rejects.toMatchObject({ code: "participant_not_found" });
  });
});
