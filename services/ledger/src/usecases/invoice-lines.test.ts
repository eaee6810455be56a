// Which bank lines are offered to invoicing: credits whose description or reference names an invoice number, the
// number upper-cased; debits and lines without a number are left to the ordinary matching.
import { describe, expect, it } from "vitest";
import { invoiceLines, matchInvoiceLines } from "./invoice-lines.ts";

const line = (id: string, amount: number, description: string, reference = "") => ({ id, date: "2024-08-20", amount, currency: "USD", reference, description });

describe("bank lines naming an invoice", () => {
  it("finds the number in the description or the reference of a credit", () => {
    const found = invoiceLines([
      line("a", 12_345, "Payment for inv-000042 thanks"),
      line("b", 500, "Transfer", "INV-1234567"),
      line("c", -500, "Refund of INV-000042"),
      line("d", 700, "INV-42 is too short"),
      line("e", 700, "XINV-000042 is part of a word"),
    ]);
    expect(found.map((f) => [f.line.id, f.number])).toEqual([
      ["a", "INV-000042"],
      ["b", "INV-1234567"],
    ]);
  });

  it("matches a line to the payment invoicing answers, and leaves a declined one alone", async () => {
    const inserted: string[] = [];
    const deps = {
      reconciliation: {
        insertIds: async (_t: unknown, m: readonly { id: string; bankLineId: string }[]) => (inserted.push(...m.map((x) => x.bankLineId)), m.map((x) => x.id)),
      },
      invoiceLines: {
        matchBankLine: async (r: { bank_line_id: string }) =>
          r.bank_line_id === "a"
            ? { matched: true as const, transaction_id: "txn_1", invoice_id: "inv_1" }
            : { matched: false as const, reason: "invoice_paid" },
      },
    } as unknown as Parameters<typeof matchInvoiceLines>[0];
    const result = await matchInvoiceLines(deps, { orgId: "org_1", livemode: false }, [line("a", 100, "INV-000001"), line("b", 100, "INV-000002")]);
    expect([...result.lineIds]).toEqual(["a"]);
    expect(result.matchIds).toHaveLength(1);
    expect(inserted).toEqual(["a"]);
  });
});
