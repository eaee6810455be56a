// Buckets by days past due at the as-of date (their edges, a leap year's February), and rows per customer: by id
// where there is one, else by name.
import { describe, expect, it } from "vitest";
import { age, bucketOf, daysPastDue } from "./aging.ts";

describe("aging buckets", () => {
  it("counts days between calendar dates, across a leap February", () => {
    expect(daysPastDue("2024-01-31", "2024-03-31")).toBe(60);
    expect(daysPastDue("2024-03-31", "2024-03-31")).toBe(0);
    expect(daysPastDue("2024-04-01", "2024-03-31")).toBe(-1);
  });

  it("puts each edge in its bucket", () => {
    expect([0, -5, 1, 30, 31, 60, 61, 90, 91].map(bucketOf)).toEqual([
      "current",
      "current",
      "days_1_30",
      "days_1_30",
      "days_31_60",
      "days_31_60",
      "days_61_90",
      "days_61_90",
      "over_90",
    ]);
  });

  it("sums per bucket and per customer, sorted by name", () => {
    const aged = age(
      [
        { party_id: "c1", party: "Acme", due_date: "2024-01-31", amount_cents: 10_000 },
        { party_id: "c1", party: "Acme", due_date: "2024-03-31", amount_cents: 3_000 },
        { party_id: null, party: "Beta", due_date: "2024-06-15", amount_cents: 7_550 },
        { party_id: null, party: "Acme", due_date: "2024-05-01", amount_cents: 1 },
      ],
      "2024-05-15",
    );
    expect(aged.buckets).toEqual({ current: 7_550, days_1_30: 1, days_31_60: 3_000, days_61_90: 0, over_90: 10_000 });
    expect(aged.total_cents).toBe(20_551);
    expect(aged.rows.map((r) => [r.id, r.name, r.total_cents])).toEqual([
      ["c1", "Acme", 13_000],
      [null, "Acme", 1],
      [null, "Beta", 7_550],
    ]);
  });
});
