import { describe, expect, it } from "vitest";
import { autoMatch, type BankLine } from "./auto-match.ts";

const day = (n: number): string => new Date(Date.UTC(2024, 0, 1) + n * 86_400_000).toISOString().slice(0, 10);

/** n ledger transactions with distinct references; bank copies of them shifted by up to ±2 days, plus noise lines. */
function scenario(n: number, noise: number): { bank: BankLine[]; ledger: BankLine[] } {
  const ledger: BankLine[] = [];
  const bank: BankLine[] = [];
  for (let i = 0; i < n; i++) {
    // Amounts repeat every 50 transactions, so lines have several same-amount candidates inside the window.
    const amount = ((i % 50) + 1) * 1000 * (i % 2 === 0 ? 1 : -1);
    ledger.push({ id: `L${i}`, date: day(i % 365), amount, currency: "EUR", reference: `INV-${i}`, description: `Invoice ${i} customer ${i % 13}` });
    bank.push({
      id: `B${i}`,
      date: day((i % 365) + ((i % 5) - 2)),
      amount,
      currency: "EUR",
      reference: "",
      description: `SEPA credit INV-${i} customer ${i % 13}`,
    });
  }
  for (let j = 0; j < noise; j++) bank.push({ id: `N${j}`, date: day(j % 60), amount: 7_777_777 + j, currency: "EUR", description: `noise ${j}` });
  return { bank, ledger };
}

describe("autoMatch", () => {
  it("matches every exact counterpart (amount, ±2 days, reference in the text) and leaves every noise line unmatched", () => {
    // Proves correctness at a size where many candidates share an amount: references pick the right one.
    const { bank, ledger } = scenario(2000, 300);
    const r = autoMatch(bank, ledger, { dateWindowDays: 3 });
    expect(r.matched).toHaveLength(2000);
    expect(r.matched.every((p) => p.bank_id.slice(1) === p.ledger_id.slice(1) && p.reference_match)).toBe(true);
    expect(r.unmatched_bank).toEqual(Array.from({ length: 300 }, (_, j) => `N${j}`));
    expect(r.unmatched_ledger).toEqual([]);
  });

  it("is one-to-one: two identical bank lines and one ledger transaction give one pair and one unmatched line", () => {
    // Proves a ledger transaction is never used twice.
    const line = { date: "2024-01-10", amount: 500, currency: "EUR", description: "rent" };
    const r = autoMatch(
      [
        { id: "b1", ...line },
        { id: "b2", ...line },
      ],
      [{ id: "l1", ...line }],
    );
    expect(r.matched.map((p) => [p.bank_id, p.ledger_id])).toEqual([["b1", "l1"]]);
    expect(r.unmatched_bank).toEqual(["b2"]);
  });

  it("respects the date window and the currency, and never matches a different amount", () => {
    // Proves what must not match does not.
    const ledger = [{ id: "l1", date: "2024-01-10", amount: 500, currency: "EUR", reference: "X1" }];
    expect(autoMatch([{ id: "b", date: "2024-01-14", amount: 500, currency: "EUR", reference: "X1" }], ledger, { dateWindowDays: 3 }).matched).toEqual([]);
    expect(autoMatch([{ id: "b", date: "2024-01-10", amount: 500, currency: "USD", reference: "X1" }], ledger).matched).toEqual([]);
    expect(autoMatch([{ id: "b", date: "2024-01-10", amount: 501, currency: "EUR", reference: "X1" }], ledger).matched).toEqual([]);
    expect(autoMatch([{ id: "b", date: "2024-01-13", amount: 500, currency: "EUR", reference: "X1" }], ledger, { dateWindowDays: 3 }).matched).toHaveLength(1);
  });

  it("prefers the reference over the nearer date", () => {
    // Proves similarity outranks date distance when both candidates have the amount.
    const ledger = [
      { id: "near", date: "2024-01-10", amount: 900, reference: "AAA111" },
      { id: "ref", date: "2024-01-12", amount: 900, reference: "BBB222" },
    ];
    const r = autoMatch([{ id: "b", date: "2024-01-10", amount: 900, reference: "BBB222" }], ledger);
    expect(r.matched.map((p) => p.ledger_id)).toEqual(["ref"]);
    expect(r.matched[0]!.confidence).toBeCloseTo(0.9, 3);
  });

  it("is deterministic: shuffled inputs give the same pairs", () => {
    // Proves ties are broken by stable rules, so re-running a reconciliation never reshuffles it.
    const { bank, ledger } = scenario(500, 50);
    const pairs = (b: BankLine[], l: BankLine[]) =>
      autoMatch(b, l)
        .matched.map((p) => `${p.bank_id}:${p.ledger_id}`)
        .sort();
    const reversed = pairs([...bank].reverse(), [...ledger].reverse());
    expect(reversed).toEqual(pairs(bank, ledger));
  });

  it("matches 20,000 × 20,000 whole, and one amount shared by every line still pairs them all", () => {
    // Proves the indexed approach holds at size; its speed (100,000 × 100,000) is measured by bench:imports, not here.
    const { bank, ledger } = scenario(20_000, 1000);
    expect(autoMatch(bank, ledger).matched).toHaveLength(20_000);
    // Every line in one amount bucket on one day: each bank line scores at most candidatesMax ledger lines.
    const same = (prefix: string): BankLine[] => Array.from({ length: 5_000 }, (_, i) => ({ id: `${prefix}${i}`, amount: 1234, date: "2026-01-15" }));
    const r = autoMatch(same("b"), same("l"));
    expect(r.matched).toHaveLength(5_000);
    expect(r.unmatched_bank).toEqual([]);
  });

  it("finds a reference among more same-amount, same-day transactions than it scores by date", () => {
    // Proves a reference match does not depend on the transaction's position among its identical neighbours.
    const ledger = Array.from({ length: 500 }, (_, i) => ({ id: `l${i}`, amount: 999, date: "2026-02-02", reference: `PO-${i}` }));
    const r = autoMatch(
      [
        { id: "by-reference", amount: 999, date: "2026-02-03", reference: "PO-377" },
        { id: "by-word", amount: 999, date: "2026-02-02", description: "ACH credit PO-412 marketplace" },
      ],
      ledger,
    );
    expect(r.matched.map((p) => [p.bank_id, p.ledger_id, p.reference_match])).toEqual([
      ["by-reference", "l377", true],
      ["by-word", "l412", true],
    ]);
  });
});
