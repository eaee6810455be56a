// Proves the reading of notifications of change: COR entries in a bank file laid out by NACHA's fixed-width
// records (built by the independent test writer from a real written file), and each change code's corrected data
// field (C01–C07), with unknown, informational and malformed codes refused rather than guessed.
import { describe, expect, it } from "vitest";
import { buildReturnFile, readNachaFile } from "../../test/nacha-reader.ts";
import { renderNachaFile, type NachaCredit, type NachaOrigin } from "./nacha.ts";
import { readCorrection } from "./nacha-changes.ts";
import { parseReturnFile, unusableAccountReason } from "./nacha-returns.ts";

const origin: NachaOrigin = {
  immediateDestination: "091000019",
  immediateDestinationName: "ODFI BANK",
  immediateOrigin: "1234567890",
  immediateOriginName: "Treasury Platform",
  companyName: "Treasury Plat",
  companyId: "1234567890",
  odfiRouting: "021000021",
  entryDescription: "PAYOUT",
};

const credit = (n: number, accountType: "checking" | "savings" = "checking"): NachaCredit => ({
  traceSequence: n,
  routingNumber: "011000015",
  accountNumber: `00012345${n}`,
  accountType,
  amountCents: 1000 * n,
  individualId: `PO${n}`,
  individualName: `Creator ${n}`,
});

const original = () =>
  readNachaFile(
    renderNachaFile({
      origin,
      creation: new Date(Date.UTC(2026, 2, 6, 14)),
      fileIdModifier: "A",
      effectiveDate: "2026-03-09",
      credits: [credit(1), credit(2, "savings")],
    }).text,
  );

describe("notifications of change in a bank file", () => {
  it("reads COR entries beside returns: change code, original trace and the 29-character corrected data", () => {
    const text = buildReturnFile(
      original(),
      [{ trace: "021000020000001", code: "R03" }],
      [
        { trace: "021000020000002", code: "C01", correctedData: "987654321" },
        { trace: "021000020000001", code: "C07", correctedData: "121000358445566778899      32" },
      ],
    );
    for (const line of text.trimEnd().split("\r\n")) expect(line).toHaveLength(94);
    const parsed = parseReturnFile(text);
    expect(parsed.returns).toEqual([{ returnCode: "R03", originalTrace: "021000020000001", amountCents: 1000, line: 3 }]);
    expect(parsed.notices).toEqual([
      { changeCode: "C01", originalTrace: "021000020000002", correctedData: "987654321".padEnd(29, " "), line: 7 },
      { changeCode: "C07", originalTrace: "021000020000001", correctedData: "121000358445566778899      32", line: 9 },
    ]);
    // The addenda's corrected data is positions 36–64 of the type 98 record.
    const addenda = text.split("\r\n").find((l) => l.startsWith("798C01"));
    expect(addenda?.slice(35, 64).trimEnd()).toBe("987654321");
  });
});

describe("corrected data by change code", () => {
  it("reads each layout NACHA defines for bank details", () => {
    expect(readCorrection("C01", "987654321")).toEqual({ ok: true, correction: { account_number: "987654321" } });
    expect(readCorrection("C02", "121000358")).toEqual({ ok: true, correction: { routing_number: "121000358" } });
    expect(readCorrection("C03", "121000358   44556677")).toEqual({ ok: true, correction: { routing_number: "121000358", account_number: "44556677" } });
    expect(readCorrection("C05", "32")).toEqual({ ok: true, correction: { account_type: "savings" } });
    expect(readCorrection("C05", "22")).toEqual({ ok: true, correction: { account_type: "checking" } });
    expect(readCorrection("C06", "44556677".padEnd(17) + "   32")).toEqual({ ok: true, correction: { account_number: "44556677", account_type: "savings" } });
    expect(readCorrection("C07", "121000358" + "44556677".padEnd(17) + "22")).toEqual({
      ok: true,
      correction: { routing_number: "121000358", account_number: "44556677", account_type: "checking" },
    });
  });

  it("lists unknown, informational and malformed notices as not applied, with why", () => {
    const refused = (code: string, data: string) => {
      const r = readCorrection(code, data);
      return r.ok ? "applied" : r.reason;
    };
    expect(refused("C99", "987654321")).toMatch(/not a change code NACHA defines/);
    expect(refused("X01", "987654321")).toMatch(/is not a change code/);
    expect(refused("C04", "NEW NAME")).toMatch(/corrects nothing a bank account holds/);
    expect(refused("C13", "")).toMatch(/corrects nothing/);
    expect(refused("C01", "")).toMatch(/account number is not 4–17 digits/);
    expect(refused("C01", " 987654321")).toMatch(/left-justified/);
    expect(refused("C01", "98765-4321")).toMatch(/not 4–17 digits/);
    expect(refused("C02", "121000359")).toMatch(/not a valid ABA routing number/);
    expect(refused("C03", "121000358XXX44556677")).toMatch(/blanks in positions 10–12/);
    expect(refused("C05", "42")).toMatch(/names no checking or savings account/);
    expect(refused("C06", "44556677".padEnd(17) + "   52")).toMatch(/names no checking or savings/);
    expect(refused("C06", "44556677".padEnd(17) + "XX 32")).toMatch(/blanks in positions 18–20/);
    expect(refused("C07", "121000358" + "44556677".padEnd(17))).toMatch(/transaction code/);
  });
});

describe("returns that make an account unusable", () => {
  it("names the codes whose account cannot take money, with why; others leave it usable", () => {
    for (const code of ["R02", "R03", "R04", "R16", "R20"]) expect(unusableAccountReason(code)).toEqual(expect.any(String));
    for (const code of ["R01", "R06", "R17", "R23", "R24", "R61", "R99"]) expect(unusableAccountReason(code)).toBeUndefined();
  });
});
