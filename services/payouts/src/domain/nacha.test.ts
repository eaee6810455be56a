// Proves the NACHA writer against an independent reader, the return file parser, and the payout postings.
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { cents } from "@treasury/contracts";
import { buildReturnFile, readNachaFile } from "../../test/nacha-reader.ts";
import { assessEligibility } from "./eligibility.ts";
import { netAmount, payoutPostings, returnPostings, settlementPostings } from "./money.ts";
import { entryHashOf, nextBankingDay, NachaError, renderNachaFile, type NachaCredit, type NachaOrigin } from "./nacha.ts";
import { parseReturnFile, returnReason, ReturnFileError } from "./nacha-returns.ts";

const origin: NachaOrigin = {
  immediateDestination: "091000019",
  immediateDestinationName: "Wells Fargo",
  immediateOrigin: "1234567890",
  immediateOriginName: "Treasury Platform",
  companyName: "Treasury Plat",
  companyId: "1234567890",
  odfiRouting: "021000021",
  entryDescription: "PAYOUT",
};

const credit = (n: number, extra: Partial<NachaCredit> = {}): NachaCredit => ({
  traceSequence: n,
  routingNumber: n % 2 === 0 ? "011000015" : "121000358",
  accountNumber: `0001234${String(n).padStart(4, "0")}`,
  accountType: n % 3 === 0 ? "savings" : "checking",
  amountCents: 1000 * n + 7,
  individualId: `PO${n}`,
  individualName: `Creator Number ${n}`,
  ...extra,
});

const creation = new Date(Date.UTC(2026, 2, 6, 14, 5));

describe("NACHA writer, read back independently", () => {
  it("writes header, PPD batch, entries, addenda, controls and nines padding that the reader accepts", () => {
    // Proves the layout of every record type and every control total on a small file with and without addenda.
    const credits = [credit(1, { addenda: "Payout po_abc for March" }), credit(2), credit(3, { individualName: "Zoë Ñandú-O'Neil" })];
    const { text, totals } = renderNachaFile({ origin, creation, fileIdModifier: "A", effectiveDate: "2026-03-09", credits });
    const file = readNachaFile(text);
    expect(file).toMatchObject({
      immediateDestination: "091000019",
      immediateOrigin: "1234567890",
      creationDate: "260306",
      creationTime: "1405",
      fileIdModifier: "A",
      recordCount: 10,
    });
    expect(file.batches).toHaveLength(1);
    const batch = file.batches[0];
    expect(batch).toMatchObject({
      serviceClass: "220",
      secCode: "PPD",
      companyName: "TREASURY PLAT",
      companyId: "1234567890",
      entryDescription: "PAYOUT",
      effectiveDate: "260309",
      odfi: "02100002",
      batchNumber: 1,
    });
    expect(batch?.entries.map((e) => [e.transactionCode, e.receivingDfi + e.checkDigit, e.amountCents, e.traceNumber, e.addenda.length])).toEqual([
      ["22", "121000358", 1007, "021000020000001", 1],
      ["22", "011000015", 2007, "021000020000002", 0],
      ["32", "121000358", 3007, "021000020000003", 0],
    ]);
    expect(batch?.entries[0]?.addenda[0]).toMatchObject({ typeCode: "05", info: "PAYOUT PO ABC FOR MARCH", sequence: "0001", entrySequence: "0000001" });
    expect(batch?.entries[2]?.individualName).toBe("ZOE NANDU-O'NEIL");
    expect(file.control).toEqual({ batchCount: 1, blockCount: 1, entryAddendaCount: 4, entryHash: "0025300071", totalDebit: 0, totalCredit: 6021 });
    expect(totals).toMatchObject({
      entryAddendaCount: 4,
      totalCreditCents: 6021,
      entryHash: "0025300071",
      blockCount: 1,
      traceNumbers: ["021000020000001", "021000020000002", "021000020000003"],
    });
  });

  it("keeps every control total right for any set of credits", () => {
    // Proves, over random files, that the reader's recomputed counts, hash, totals and blocking match what the writer wrote.
    const arbCredit = fc.record({
      routing: fc.constantFrom("011000015", "121000358", "091000019", "026009593", "322271627"),
      account: fc.stringMatching(/^[0-9]{4,17}$/),
      savings: fc.boolean(),
      amount: fc.integer({ min: 1, max: 9_999_999_999 }),
      name: fc.string({ maxLength: 40 }),
      addenda: fc.option(fc.string({ maxLength: 100 }), { nil: undefined }),
    });
    fc.assert(
      fc.property(fc.array(arbCredit, { minLength: 1, maxLength: 60 }), (cs) => {
        const credits: NachaCredit[] = cs.map((c, i) => ({
          traceSequence: i + 1,
          routingNumber: c.routing,
          accountNumber: c.account,
          accountType: c.savings ? "savings" : "checking",
          amountCents: c.amount,
          individualId: `ID${i}`,
          individualName: c.name,
          addenda: c.addenda,
        }));
        const { text, totals } = renderNachaFile({ origin, creation, fileIdModifier: "Z", effectiveDate: "2026-03-09", credits });
        const file = readNachaFile(text);
        expect(file.control.totalCredit).toBe(cs.reduce((s, c) => s + c.amount, 0));
        expect(file.control.entryAddendaCount).toBe(cs.length + cs.filter((c) => c.addenda !== undefined).length);
        expect(file.control.blockCount).toBe(Math.ceil((4 + file.control.entryAddendaCount) / 10));
        expect(totals.traceNumbers).toEqual(file.batches[0]?.entries.map((e) => e.traceNumber));
      }),
      { numRuns: 200 },
    );
  });

  it("refuses what a bank would reject instead of writing it", () => {
    // Proves bad routing numbers, oversize amounts, empty files and bad modifiers are errors, never a written file.
    const render =
      (credits: NachaCredit[], modifier = "A") =>
      () =>
        renderNachaFile({ origin, creation, fileIdModifier: modifier, effectiveDate: "2026-03-09", credits });
    expect(render([credit(1, { routingNumber: "011000016" })])).toThrow(NachaError);
    expect(render([credit(1, { amountCents: 10_000_000_000 })])).toThrow(NachaError);
    expect(render([credit(1, { amountCents: 0 })])).toThrow(NachaError);
    expect(render([])).toThrow(NachaError);
    expect(render([credit(1)], "a")).toThrow(NachaError);
    expect(render([credit(1, { accountNumber: "123456789012345678" })])).toThrow(NachaError);
  });

  it("computes the entry hash on the rightmost ten digits and rolls effective dates past weekends", () => {
    // Proves the hash's overflow rule and the banking-day rule.
    expect(entryHashOf(Array.from({ length: 200 }, () => "999999999"))).toBe("9999999800"); // 200 × 99,999,999 = 19,999,999,800
    expect(nextBankingDay(new Date("2026-03-06T12:00:00Z"))).toBe("2026-03-09"); // Friday → Monday
    expect(nextBankingDay(new Date("2026-03-09T12:00:00Z"))).toBe("2026-03-10");
  });
});

describe("return files", () => {
  it("reads R codes and original trace numbers, with CRLF lines and notices of change apart", () => {
    // Proves the parser on a return file built by the independent test writer from a real written file.
    const { text } = renderNachaFile({ origin, creation, fileIdModifier: "A", effectiveDate: "2026-03-09", credits: [credit(1), credit(2), credit(3)] });
    const returns = buildReturnFile(readNachaFile(text), [
      { trace: "021000020000002", code: "R03" },
      { trace: "021000020000003", code: "R01" },
    ]);
    const parsed = parseReturnFile(returns);
    expect(parsed.returns).toEqual([
      { returnCode: "R03", originalTrace: "021000020000002", amountCents: 2007, line: 3 },
      { returnCode: "R01", originalTrace: "021000020000003", amountCents: 3007, line: 5 },
    ]);
    expect(parsed.notices).toEqual([]);
    const noc = returns.replace("799R03", "798C01");
    expect(parseReturnFile(noc).notices).toEqual([{ changeCode: "C01", originalTrace: "021000020000002", correctedData: " ".repeat(29), line: 3 }]);
    expect(returnReason("R02")).toBe("R02: Account closed");
    expect(returnReason("R99")).toBe("R99: Returned by the receiving bank");
  });

  it("refuses text that is not a NACHA file, naming the line", () => {
    // Proves garbage, long lines and malformed return addenda are errors rather than silently ignored.
    expect(() => parseReturnFile("hello")).toThrow(ReturnFileError);
    expect(() => parseReturnFile("")).toThrow(ReturnFileError);
    expect(() => parseReturnFile(`101${"x".repeat(100)}\n`)).toThrow(/line 1 is 103 characters/);
    const { text } = renderNachaFile({ origin, creation, fileIdModifier: "A", effectiveDate: "2026-03-09", credits: [credit(1)] });
    const ret = buildReturnFile(readNachaFile(text), [{ trace: "021000020000001", code: "R04" }]);
    expect(() => parseReturnFile(ret.replace("799R04", "799X04"))).toThrow(/return reason code/);
  });
});

describe("payout postings", () => {
  const wallet = { participant_id: "c1" };
  it("splits the wallet's amount between the bank and fees to the cent", () => {
    // Proves both fee payers: creator → bank gets amount − fees, revenue gets fees; platform → bank gets amount, fee is an expense.
    const creator = { amount: cents(10_000), fees: cents(125), feesPaidBy: "creator" as const };
    expect(netAmount(creator)).toBe(9875);
    expect(payoutPostings(wallet, creator, "bank_ach")).toEqual([
      { debit: wallet, credit: { system: "payouts_in_transit" }, amount: 9875 },
      { debit: wallet, credit: { system: "platform_revenue" }, amount: 125 },
    ]);
    const platform = { amount: cents(10_000), fees: cents(125), feesPaidBy: "platform" as const };
    expect(netAmount(platform)).toBe(10_000);
    expect(payoutPostings(wallet, platform, "sandbox")).toEqual([
      { debit: wallet, credit: { system: "platform_cash" }, amount: 10_000 },
      { debit: { system: "expense" }, credit: { system: "platform_cash" }, amount: 125 },
    ]);
    expect(settlementPostings(creator)).toEqual([{ debit: { system: "payouts_in_transit" }, credit: { system: "platform_cash" }, amount: 9875 }]);
    expect(returnPostings(wallet, creator, "platform_cash")).toEqual([
      { debit: { system: "platform_cash" }, credit: wallet, amount: 9875 },
      { debit: { system: "platform_revenue" }, credit: wallet, amount: 125 },
    ]);
    expect(() => netAmount({ amount: cents(100), fees: cents(100), feesPaidBy: "creator" })).toThrow();
  });
});

describe("eligibility", () => {
  const facts = {
    livemode: true,
    participantId: "c1",
    availableBalance: 500,
    walletStatus: "active",
    kycStatus: "approved",
    taxCertified: true,
    bankAccount: { last4: "6789", accountType: "checking", routingNumber: "011000015", status: "active", disabledReason: null as string | null },
    businessStatus: "approved",
  };
  it("needs everything live and only a positive balance in sandbox", () => {
    // Proves each issue code appears exactly when its fact is missing, and sandbox ignores all but the balance.
    expect(assessEligibility(facts)).toMatchObject({ eligible: true, issues: [], available_balance_cents: 500 });
    const none = {
      ...facts,
      availableBalance: 0,
      walletStatus: "frozen",
      kycStatus: "under_review",
      taxCertified: false,
      bankAccount: undefined,
      businessStatus: "pending",
    };
    expect(assessEligibility(none).issues).toEqual([
      "kyc_not_approved",
      "tax_not_certified",
      "no_bank_account",
      "creator_access_inactive",
      "org_payouts_disabled",
      "insufficient_balance",
    ]);
    expect(assessEligibility({ ...none, livemode: false }).issues).toEqual(["insufficient_balance"]);
    expect(assessEligibility({ ...none, livemode: false, availableBalance: 1 })).toMatchObject({ eligible: true, issues: [] });
    expect(assessEligibility({ ...facts, taxCertified: false }).issues).toEqual(["tax_not_certified"]);
    expect(assessEligibility(facts, 501).issues).toEqual(["insufficient_balance"]);
  });
});
