import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseStatement } from "../parse.ts";
import { fixture, TEST_DATA_DIR } from "../testing/fixtures.ts";
import { minorUnits } from "./currency.ts";
import { formatDecimal, parseDecimal, toMinorUnits } from "./decimal.ts";
import { detectFormat } from "./detect.ts";
import { StatementError } from "./errors.ts";

describe("exact amounts", () => {
  it("decimal strings become integers without floats: 0.1 + 0.2 style values, signs, commas, huge values", () => {
    // Proves parsing and minor-unit conversion are exact and refuse what they cannot hold.
    expect(toMinorUnits(parseDecimal("-34.51")!, 2)).toBe(-3451);
    expect(toMinorUnits(parseDecimal("9,", { decimalSeparator: "," })!, 2)).toBe(900);
    expect(toMinorUnits(parseDecimal("1.234,56", { decimalSeparator: ",", thousandsSeparator: "." })!, 2)).toBe(123456);
    expect(toMinorUnits(parseDecimal("8.850")!, 2)).toBe(885);
    expect(toMinorUnits(parseDecimal("8.855")!, 2)).toBeNull();
    expect(toMinorUnits(parseDecimal("99999999999999999999")!, 2)).toBeNull();
    expect(formatDecimal(parseDecimal("-0.00")!)).toBe("0.00");
    expect(formatDecimal(parseDecimal(".5")!)).toBe("0.5");
    for (const bad of ["", "-", "1.2.3", "1e5", "12a", "0x10"]) expect(parseDecimal(bad)).toBeNull();
  });

  it("minor units follow ISO 4217: HUF 2, JPY 0, KWD 3, CLF 4, gold none, withdrawn DEM 2", () => {
    // Proves the precision table used for every amount.
    expect([minorUnits("HUF"), minorUnits("JPY"), minorUnits("KWD"), minorUnits("CLF"), minorUnits("XAU"), minorUnits("DEM"), minorUnits("PLN")]).toEqual([
      2,
      0,
      3,
      4,
      null,
      2,
      2,
    ]);
  });
});

describe("format detection from content only", () => {
  it("every fixture is detected by its content, whatever its file name says", () => {
    // Proves auto detection reads markers, never names: QFX-marked OFX files say qfx, all others their family.
    const expected: Record<string, string> = {
      "ofx/asgrim-bancodobrasil-brl-v102.ofx": "ofx",
      "ofx/asgrim-multiple-accounts-gbp-v200.ofx": "ofx",
      "ofx/asgrim-savings-usd-v200.ofx": "ofx",
      "ofx/ofxparse-suncorp-aud-v200-crlf.ofx": "ofx",
      "ofx/ofxparse-bank-medium-cad-v102.ofx": "qfx",
      "ofx/ofxparse-checking-v102.ofx": "qfx",
      "qfx/actual-html-entities-cad.qfx": "qfx",
      "qfx/actual-utf8-cad.qfx": "qfx",
      "qfx/ofxparse-chase-creditcard.qfx": "qfx",
      "mt940/wolph-citi-usd.sta": "mt940",
      "mt940/wolph-cmxl-three-statements.sta": "mt940",
      "mt940/wolph-jejik-abnamro.sta": "mt940",
      "mt940/wolph-jejik-rabobank-iban.sta": "mt940",
      "mt940/wolph-mbank-pln.sta": "mt940",
      "mt940/wolph-sberbank-huf-crlf.sta": "mt940",
      "bai2/moov-sample1-cad.bai2": "bai2",
      "bai2/moov-sample2-multigroup.bai2": "bai2",
      "bai2/moov-sample3-multiple-records-per-line.bai2": "bai2",
      "bai2/moov-sample4-newline-continuations.bai2": "bai2",
      "bai2/moov-sample5-slashes-in-text.bai2": "bai2",
      "camt053/genkgo-camt053.v2.minimal.xml": "camt053",
      "camt053/genkgo-camt053.v4.xml": "camt053",
      "camt053/genkgo-camt053.v8.xml": "camt053",
      "csv/csv2ofx-ing-es.csv": "csv",
      "csv/csv2ofx-schwab-checking-us.csv": "csv",
    };
    for (const [path, format] of Object.entries(expected)) expect([path, detectFormat(fixture(path).toString("latin1"))]).toEqual([path, format]);
  });

  it("a BOM, leading blank lines and SWIFT envelope blocks do not hide the format", () => {
    // Proves detection skips noise before the first marker.
    expect(detectFormat('\ufeff\n\n<?xml version="1.0"?><Document xmlns="urn:iso:std:iso:20022:tech:xsd:camt.053.001.08">')).toBe("camt053");
    expect(detectFormat("{1:F01BANKBEBBAXXX0000000000}{2:O9400000000000}{4:\n:20:X\n")).toBe("mt940");
    expect(detectFormat("\u0001\n:20:X\n:25:1\n:60F:C240101EUR1,00\n")).toBe("mt940");
  });
});

describe("errors and limits", () => {
  it("unknown formats, empty input and oversized input fail with stable codes", () => {
    // Proves callers get StatementError codes, never generic exceptions.
    const codeOf = (f: () => unknown): string => {
      try {
        f();
      } catch (e) {
        expect(e).toBeInstanceOf(StatementError);
        return (e as StatementError).code;
      }
      return "no error";
    };
    expect(codeOf(() => parseStatement("x", { format: "qif" as never }))).toBe("unsupported_format");
    expect(codeOf(() => parseStatement("  \n", { format: "auto" }))).toBe("invalid_statement");
    expect(codeOf(() => parseStatement(Buffer.alloc(2048, 65), { format: "auto", bytesMax: 1024 }))).toBe("statement_too_large");
    expect(codeOf(() => parseStatement("01,A,B,240101,0000,1/\n", { format: "mt940" }))).toBe("invalid_statement");
    expect(
      codeOf(() =>
        parseStatement(fixture("csv/csv2ofx-ing-es.csv"), {
          format: "csv",
          mapping: { date: "date", amount: "amount", currency: "EUR", encoding: "ebcdic" } as never,
        }),
      ),
    ).toBe("invalid_mapping");
  });
});

describe("test data", () => {
  it("every file under test-data is byte-identical to the SHA-256 list in SOURCES.md", () => {
    // Proves the fixtures were copied unchanged (CRLF, control bytes and charsets included).
    const sources = readFileSync(join(TEST_DATA_DIR, "SOURCES.md"), "utf8");
    const rows = [...sources.matchAll(/^([0-9a-f]{64}) {2}(\S+)$/gm)];
    expect(rows.length).toBe(31);
    for (const [, sha, path] of rows)
      expect([
        path,
        createHash("sha256")
          .update(fixture(path as string))
          .digest("hex"),
      ]).toEqual([path, sha]);
  });
});
