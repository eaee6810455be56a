import { describe, expect, it } from "vitest";
import { parseStatement } from "../parse.ts";
import { fixture } from "../testing/fixtures.ts";

const read = (path: string) => parseStatement(fixture(path), { format: "auto" });
const details = (r: ReturnType<typeof read>) => r.statements.reduce((n, s) => n + s.transactions.length, 0);
const codes = (r: ReturnType<typeof read>) => r.warnings.map((w) => w.code);

describe("BAI2", () => {
  it("sample 1 (CAD): two account records for one account, 11 + 6 details, 03 continued by 88, no final newline", () => {
    // Proves every detail is read with its sign from the type code and the trailers' totals check out (no warnings).
    const r = read("bai2/moov-sample1-cad.bai2");
    expect(r.format).toBe("bai2");
    expect(r.statements.map((s) => [s.account.id, s.account.currency, s.transactions.length])).toEqual([
      ["10200123456", "CAD", 11],
      ["10200123456", "CAD", 6],
    ]);
    const first = r.statements[0]!.transactions;
    expect(first[0]).toMatchObject({
      amount: -2500,
      type: "debit",
      bank_code: "409",
      date: "2006-03-17",
      value_date: "2006-03-16",
      description: "RETURNED CHEQUE",
    });
    expect(first[3]).toMatchObject({ amount: 203500, type: "credit", bank_code: "108" });
    expect(codes(r)).toEqual([]);
  });

  it("sample 1: the account control totals 834000 and 446000 and the file total 1280000 match the records", () => {
    // Proves the control-total check is real: change one detail amount and the account and file totals are flagged.
    const text = fixture("bai2/moov-sample1-cad.bai2")
      .toString("latin1")
      .replace("16,409,000000000002500,V,060316,,,,RETURNED", "16,409,000000000002501,V,060316,,,,RETURNED");
    const r = parseStatement(text, { format: "bai2" });
    expect(codes(r)).toEqual(["control_total_mismatch", "control_total_mismatch", "control_total_mismatch"]);
    expect(r.warnings[0]!.message).toContain("834000");
  });

  it("sample 2: four groups, five accounts, four details, negative balances, a blank group currency meaning USD", () => {
    // Proves 88 records continue an 03's summary list, signed balances read, and the default currency applies.
    const r = read("bai2/moov-sample2-multigroup.bai2");
    expect(r.statements).toHaveLength(5);
    expect(details(r)).toBe(4);
    expect(r.statements.every((s) => s.account.currency === "USD")).toBe(true);
    const second = r.statements[1]!;
    expect(second.balances.map((b) => [b.kind, b.amount])).toEqual([
      ["010", -500000],
      ["072", 500000],
      ["074", 500000],
      ["040", -1500000],
    ]);
    expect(r.statements[2]!.transactions[0]).toMatchObject({
      amount: 20000000,
      bank_reference: "SP4738",
      reference: "YRC065321",
      description: "PROCEEDS OF LETTER OF CREDIT FROM THE ARAMCO OIL CO",
    });
    expect(codes(r)).toEqual([]);
  });

  it("sample 3: several records on one physical line, and a 16 record broken across two lines without an 88", () => {
    // Proves records are split at '/ NN,' inside a line and rejoined across a line break; all 15 accounts reconcile.
    const r = read("bai2/moov-sample3-multiple-records-per-line.bai2");
    expect(r.statements).toHaveLength(15);
    expect(details(r)).toBe(26);
    expect(r.statements[0]!.transactions.map((t) => t.amount)).toEqual([2500, 500, 100, -2500, -600, -100]);
    expect(r.statements.every((s) => s.reconciliation.reconciles === true)).toBe(true);
    const broken = r.statements[7]!.transactions[0]!;
    expect([broken.amount, broken.description, broken.raw_line_no]).toEqual([2500, "111111 ACH_SETL 1111111111 111111111111111 1111111111", 18]);
    expect(codes(r)).toEqual([]);
  });

  it("sample 4: 16/88 records ending at the newline without '/', text with commas and quotes; wrong trailer counts are warnings", () => {
    // Proves newline-terminated records are read and the file's own inconsistent trailers do not reject it.
    const r = read("bai2/moov-sample4-newline-continuations.bai2");
    expect(r.statements).toHaveLength(5);
    expect(details(r)).toBe(17);
    const t = r.statements[1]!.transactions[1]!;
    expect(t.amount).toBe(143500);
    expect(t.description).toContain('Remittance Info: "ACH- Test - Addenda Record", Entry Description: TRADE');
    expect(t.description).toContain("DABA: 026015079");
    expect(codes(r)).toContain("record_count_mismatch");
    expect(codes(r)).toContain("account_count_mismatch");
  });

  it("sample 5: '/' inside text fields stays text, and the malformed '88:EREF' is read as a continuation with a warning", () => {
    // Proves a slash only ends a record before a record code or the line end; 20 details, 3 more than sample 4.
    const r = read("bai2/moov-sample5-slashes-in-text.bai2");
    expect(details(r)).toBe(20);
    const all = r.statements.flatMap((s) => s.transactions);
    expect(all.some((t) => t.reference === "AB/GS/RPFILERP0001/RPBA0001")).toBe(true);
    expect(all.some((t) => t.description.includes('Remittance Info: "08/18/23 Invoice - Sample"'))).toBe(true);
    expect(codes(r)).toContain("malformed_record");
  });

  it("a bank-specific detail type code (700–999) is refused rather than given a guessed sign", () => {
    // Proves no money line gets a sign the file does not state.
    const text = "01,A,B,240101,0000,1,,,2/\n02,B,A,1,240101,,USD,/\n03,1,USD,010,0,,/\n16,901,100,0,,,X/\n49,100,3/\n98,100,1,5/\n99,100,1,7/\n";
    expect(() => parseStatement(text, { format: "bai2" })).toThrow(
      expect.objectContaining({ code: "invalid_statement", details: { line: 4, field: "type_code", value: "901" } }),
    );
  });
});
