// The arithmetic of invoice lines (exact cents, half up, quantities with up to four places), the number format,
// and the status an invoice shows on a given day.
import { DomainError } from "@treasury/contracts";
import { describe, expect, it } from "vitest";
import { invoiceNumber, lineAmount, normaliseQuantity, priceLines, shownStatus } from "./invoice.ts";

describe("line amounts", () => {
  it("multiplies exactly and rounds half a cent up", () => {
    expect(lineAmount("3", 12_500)).toBe(37_500);
    expect(lineAmount("0.5", 4_999)).toBe(2_500);
    expect(lineAmount("0.5", 4_997)).toBe(2_499);
    expect(lineAmount("1.2345", 10_000)).toBe(12_345);
    expect(lineAmount("0.0001", 5_000)).toBe(1);
    // 0.1 × 30 in floating point is 3.0000000000000004; here it is exact.
    expect(lineAmount(normaliseQuantity(0.1), 30)).toBe(3);
    expect(lineAmount("1000000", 100_000)).toBe(100_000_000_000);
  });

  it("refuses a quantity that rounds to nothing or is not positive", () => {
    expect(() => lineAmount("0.0001", 1)).toThrow(DomainError);
    expect(() => lineAmount(normaliseQuantity(0.1), 3)).toThrow(expect.objectContaining({ code: "invalid_quantity" }));
    expect(() => lineAmount("0", 100)).toThrow(expect.objectContaining({ code: "invalid_quantity" }));
  });

  it("normalises the written quantity", () => {
    expect([normaliseQuantity(1.5), normaliseQuantity("2.500"), normaliseQuantity("007"), normaliseQuantity(0.1)]).toEqual(["1.5", "2.5", "7", "0.1"]);
  });

  it("totals the lines and refuses none or a total above an operation's ceiling", () => {
    const { lines, total } = priceLines([
      { description: "a", quantity: 3, unit_price_cents: 12_500 },
      { description: "b", quantity: "0.5", unit_price_cents: 4_999 },
    ]);
    expect(lines.map((l) => [l.line_no, l.quantity, l.amount_cents])).toEqual([
      [1, "3", 37_500],
      [2, "0.5", 2_500],
    ]);
    expect(total).toBe(40_000);
    expect(() => priceLines([])).toThrow(expect.objectContaining({ code: "invoice_line_items_required" }));
    const big = { description: "x", quantity: 1_000_000, unit_price_cents: 100_000 };
    expect(() => priceLines([big, big])).toThrow(expect.objectContaining({ code: "amount_too_large" }));
  });
});

describe("numbers and status", () => {
  it("numbers with six digits at least", () => {
    expect([invoiceNumber(1), invoiceNumber(42), invoiceNumber(999_999), invoiceNumber(1_000_000)]).toEqual([
      "INV-000001",
      "INV-000042",
      "INV-999999",
      "INV-1000000",
    ]);
  });

  it("shows an open invoice past its due date as overdue, and nothing else", () => {
    const due = "2024-03-31";
    expect(shownStatus({ status: "sent", due_date: due }, "2024-03-31")).toBe("sent");
    expect(shownStatus({ status: "sent", due_date: due }, "2024-04-01")).toBe("overdue");
    expect(shownStatus({ status: "partially_paid", due_date: due }, "2024-04-01")).toBe("overdue");
    for (const status of ["draft", "paid", "void"] as const) expect(shownStatus({ status, due_date: due }, "2025-01-01")).toBe(status);
  });
});
