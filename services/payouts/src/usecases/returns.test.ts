// Ingesting a bank file with fakes behind the ports: an unusable-account return of a paid payout fails it, gives
// the money back and disables the bank account, so live requests are refused and schedules skip until a new
// account is set; a notification of change applies only to the account the payout was sent to.
import { cents, tenantOf } from "@treasury/contracts";
import { describe, expect, it } from "vitest";
import { fakes, type Fakes } from "../../test/fakes.ts";
import type { AchNotice, AchReturn } from "../domain/nacha-returns.ts";
import type { PayoutRow } from "../domain/records.ts";
import { putBankAccount } from "./bank-account.ts";
import { bankAccountAad, payoutDestinationAad, type SealedBankDetails } from "./deps.ts";
import { checkEligibility } from "./eligibility.ts";
import { putPayoutSchedule } from "./payout-schedule.ts";
import { requestPayout } from "./request-payout.ts";
import { ingestReturns } from "./returns.ts";
import { runDueSchedules } from "./run-schedules.ts";

const LIVE = tenantOf({ org_id: "org_a", livemode: true });
const TRACE = "091000010000001";
const ACCOUNT = { account_holder_name: "Ada Lovelace", account_number: "000123456789", routing_number: "011000015", account_type: "checking" as const };

/** An eligible live creator with its bank account, and a paid payout to it requested after the account was set. */
async function paidPayout(f: Fakes): Promise<PayoutRow> {
  f.ledger.addCreator("creator_1", 5000);
  f.compliance.creators.set("creator_1", { status: "approved", tax_certified: true });
  f.compliance.business = "approved";
  await putBankAccount(f.deps, LIVE, "creator_1", ACCOUNT);
  const at = new Date(Date.now() + 60_000);
  const dest: SealedBankDetails = { account_holder_name: ACCOUNT.account_holder_name, account_number: ACCOUNT.account_number };
  const row: PayoutRow = {
    ...{
      id: "po_1",
      risk_evaluation_id: null,
      org_id: "org_a",
      livemode: true,
      participant_id: "creator_1",
      requested_wallet_id: null,
      wallet_id: "00000000-0000-4000-8000-000000000001",
    },
    ...{ reference_id: "ref_1", request_hash: "h", reference_type: null, description: null, payout_method: null, metadata: {} },
    ...{ amount: cents(1000), fees: cents(0), fees_paid_by: "platform" as const, net_amount: cents(1000), rail: "bank_ach" as const, status: "paid" as const },
    ...{ ledger_reference: "payout:po_1", transaction_id: "txn_1", previous_balance: null, new_balance: null, refusal_code: null },
    ...{ dest_routing_number: "011000015", dest_account_type: "checking" as const, dest_last4: "6789" },
    dest_sealed: f.sealer.sealJson(dest, payoutDestinationAad("po_1")),
    ...{
      ach_file_id: "1",
      trace_number: TRACE,
      bank_transfer_status: "settled",
      action: null,
      action_at: null,
      return_from: null,
      return_code: null,
      return_fee: cents(0),
    },
    ...{ failure_reason: null, settle_transaction_id: "txn_s", return_transaction_id: null, created_at: at, updated_at: at, processing_at: at },
    ...{ paid_at: at, failed_at: null },
  };
  f.payouts.seed(row);
  return row;
}

function withFile(f: Fakes, returns: AchReturn[], notices: AchNotice[]): void {
  f.deps.rail = { ...(f.deps.rail ?? ({} as never)), parseReturns: () => ({ returns, notices }) };
}

describe("ingestReturns", () => {
  it("an R02 of a paid payout fails it, returns the money and disables the account until a new one is set", async () => {
    const f = fakes();
    await paidPayout(f);
    withFile(f, [{ returnCode: "R02", originalTrace: TRACE, amountCents: 1000, line: 3 }], []);
    const result = await ingestReturns(f.deps, "file");
    expect(result.failed).toEqual([{ payout_id: "po_1", trace_number: TRACE, return_code: "R02", bank_account_disabled: true }]);
    expect(f.ledger.posts.map((p) => p.reference_id)).toContain("payout:po_1:return");
    expect(await f.bankAccounts.find(LIVE, "creator_1")).toMatchObject({ status: "disabled", disabled_reason: "R02: the account is closed" });

    // Live requests are refused with the precise issue; a schedule's run skips with its reason.
    expect((await checkEligibility(f.deps, LIVE, "creator_1")).issues).toEqual(["bank_account_disabled"]);
    await expect(requestPayout(f.deps, LIVE, { participant_id: "creator_1", amount: 100, reference_id: "r2" })).rejects.toMatchObject({
      code: "payout_not_eligible",
      extra: { eligibility: { issues: ["bank_account_disabled"] } },
    });
    await putPayoutSchedule(f.deps, LIVE, "creator_1", { interval: "daily" });
    expect(await runDueSchedules(f.deps, { batchMax: 5, leaseMs: 60_000, at: new Date(Date.UTC(2026, 10, 28, 1)) })).toMatchObject({ skipped: 1 });
    expect(f.schedules.events.at(-1)?.data).toMatchObject({ reason: "bank_account_disabled" });

    // The same file again changes nothing; a new account makes the participant payable again.
    expect(await ingestReturns(f.deps, "file")).toMatchObject({ failed: [], already_failed: ["po_1"] });
    await putBankAccount(f.deps, LIVE, "creator_1", { ...ACCOUNT, account_number: "99887766" });
    expect(await f.bankAccounts.find(LIVE, "creator_1")).toMatchObject({ status: "active", disabled_reason: null, last4: "7766" });
    expect((await checkEligibility(f.deps, LIVE, "creator_1")).issues).toEqual([]);
  });

  it("an R01 fails the payout and leaves the account usable", async () => {
    const f = fakes();
    await paidPayout(f);
    withFile(f, [{ returnCode: "R01", originalTrace: TRACE, amountCents: 1000, line: 3 }], []);
    expect((await ingestReturns(f.deps, "file")).failed).toEqual([
      { payout_id: "po_1", trace_number: TRACE, return_code: "R01", bank_account_disabled: false },
    ]);
    expect(await f.bankAccounts.find(LIVE, "creator_1")).toMatchObject({ status: "active" });
  });

  it("applies a C06 to the account the payout went to, and not to an account set since", async () => {
    const f = fakes();
    await paidPayout(f);
    const notice: AchNotice = { changeCode: "C06", originalTrace: TRACE, correctedData: `${"55501234".padEnd(17)}   32`, line: 3 };
    withFile(f, [], [notice]);
    const [applied] = (await ingestReturns(f.deps, "file")).notices;
    expect(applied).toMatchObject({ outcome: "applied", changed: ["account_number", "account_type"], account: { last4: "1234", account_type: "savings" } });
    const row = await f.bankAccounts.find(LIVE, "creator_1");
    expect(f.sealer.openJson<SealedBankDetails>(row?.sealed ?? "", bankAccountAad(LIVE, "creator_1")).account_number).toBe("55501234");
    expect(row).toMatchObject({ account_type: "savings", last4: "1234", status: "active" });
    expect(JSON.stringify(applied)).not.toContain("55501234");

    await putBankAccount(f.deps, LIVE, "creator_1", { ...ACCOUNT, account_number: "44443333" });
    withFile(f, [], [{ ...notice, changeCode: "C01", correctedData: "12121212" }]);
    const [stale] = (await ingestReturns(f.deps, "file")).notices;
    expect(stale).toMatchObject({ outcome: "not_applied", reason: expect.stringMatching(/changed since payout po_1/) });
    expect(await f.bankAccounts.find(LIVE, "creator_1")).toMatchObject({ last4: "3333" });
  });

  it("an unusable-account return cancels the participant's payouts still waiting for a file to that account", async () => {
    const f = fakes();
    await paidPayout(f);
    const waiting = await requestPayout(f.deps, LIVE, { participant_id: "creator_1", amount: 500, reference_id: "waiting" });
    expect(waiting.status).toBe("pending");
    withFile(f, [{ returnCode: "R03", originalTrace: TRACE, amountCents: 1000, line: 3 }], []);
    const result = await ingestReturns(f.deps, "file");
    expect(result.cancelled).toEqual([{ payout_id: waiting.id, participant_id: "creator_1" }]);
    const cancelPost = f.ledger.posts.find((p) => p.reference_id === `payout:${waiting.id}:cancel`);
    expect(cancelPost?.postings).toEqual([{ debit: { system: "payouts_in_transit" }, credit: { wallet_id: waiting.wallet_id }, amount: 500 }]);
    expect(await f.payouts.findById(waiting.id)).toMatchObject({
      status: "failed",
      bank_transfer_status: "cancelled",
      failure_reason: expect.stringMatching(/^bank_account_disabled: R03/),
    });
    expect(f.payouts.events.at(-1)).toMatchObject({ type: "payout.failed" });
    // Ingesting the file again cancels nothing more.
    expect((await ingestReturns(f.deps, "file")).cancelled).toEqual([]);
  });

  it("takes the org's return fee from the money returned, at most the net amount", async () => {
    const f = fakes();
    await paidPayout(f);
    f.payouts.returnFees.set("org_a:true", 1_500);
    withFile(f, [{ returnCode: "R01", originalTrace: TRACE, amountCents: 1000, line: 3 }], []);
    await ingestReturns(f.deps, "file");
    const post = f.ledger.posts.find((p) => p.reference_id === "payout:po_1:return");
    expect(post?.postings).toContainEqual({
      debit: { wallet_id: "00000000-0000-4000-8000-000000000001" },
      credit: { system: "platform_revenue" },
      amount: 1000,
    });
    expect(await f.payouts.findById("po_1")).toMatchObject({ status: "failed", return_fee: 1000 });
  });
});
