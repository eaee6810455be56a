import { describe, expect, it } from "vitest";
import { aRecord, bRecord, fireAmounts, fireRecords, fRecord, tRecord, type FireFile, type FirePayee } from "./fire.ts";

const party = { tin: "521234567", name: "Test Marketplace Inc", address: "1 Main St", city: "Wilmington", state: "DE", zip: "19801", phone: "3025550100" };
const file: FireFile = {
  taxYear: 2025,
  test: true,
  transmitter: { ...party, tcc: "12ABC", contactName: "Tax Ops", contactEmail: "tax@example.com" },
  payer: party,
  payeeCount: 3,
};

function payee(form: FirePayee["form"], state: string, gross: number, tin = "123456789"): FirePayee {
  const monthly = Array.from({ length: 12 }, (_, i) => (i === 0 ? gross : 0));
  return {
    form,
    tinType: "ssn",
    tin,
    name: "Zoë Ñandú",
    address: "12 Analytical Way",
    city: "Austin",
    state,
    zip: "78701-1234",
    accountNumber: "creator_1",
    amounts: fireAmounts(form, gross, monthly),
    transactionCount: 7,
    corrected: false,
  };
}

async function all(gen: AsyncIterable<string>): Promise<string[]> {
  const out: string[] = [];
  for await (const r of gen) out.push(r);
  return out;
}

async function* from<T>(xs: T[]): AsyncGenerator<T> {
  for (const x of xs) yield x;
}

describe("FIRE records", () => {
  it("are 750 bytes of printable upper-case ASCII ending in CR LF, fields where Publication 1220 puts them", () => {
    // Proves each record's length, its type letter and a few fields at their published positions.
    const records = [tRecord(file, 1), aRecord(file, "1099-K", true, 2), bRecord(file, payee("1099-K", "CA", 12_345), 3), fRecord(1, 1, 5)];
    for (const r of records) {
      expect(r).toHaveLength(750);
      expect(r.endsWith("\r\n")).toBe(true);
      expect(/^[\x20-\x7e]*\r\n$/.test(r)).toBe(true);
    }
    const [t, a, b] = records as [string, string, string];
    expect(t.slice(0, 5)).toBe("T2025");
    expect(t.slice(15, 20)).toBe("12ABC");
    expect(t[27]).toBe("T");
    expect(t.slice(295, 303)).toBe("00000003");
    expect(a.slice(25, 27)).toBe("MC");
    expect(a[5]).toBe("1");
    expect(b.slice(54, 66)).toBe("000000012345");
    expect(b.slice(287, 297)).toBe("ZOE NANDU ");
    expect(b.slice(489, 498)).toBe("787011234");
    expect(b.slice(548, 561)).toBe("0000000000007");
    expect(b.slice(746, 748)).toBe("06");
  });

  it("streams T, then per form A, B…, C and K per program state, then F, with totals of what was written", async () => {
    // Proves the block structure and that C, K and F count and total exactly the B records.
    const payees = [payee("1099-K", "CA", 100), payee("1099-K", "TX", 250, "987654321"), payee("1099-NEC", "CA", 60_000)];
    const records = await all(fireRecords(file, from(payees)));
    expect(records.map((r) => r[0]).join("")).toBe("TABBCKABCKF");
    const c1 = records[4] ?? "";
    expect(c1.slice(1, 9)).toBe("00000002");
    expect(c1.slice(15, 33)).toBe("000000000000000350");
    const k1 = records[5] ?? "";
    expect([k1.slice(1, 9), k1.slice(15, 33), k1.slice(746, 748)]).toEqual(["00000001", "000000000000000100", "06"]);
    expect((records[6] ?? "").slice(25, 27)).toBe("NE");
    const f = records[10] ?? "";
    expect([f.slice(1, 9), f.slice(49, 57)]).toEqual(["00000002", "00000003"]);
    expect(records.map((r) => Number(r.slice(499, 507)))).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
  });

  it("refuses a file whose announced payee count differs from what it wrote, and amounts that do not fit", async () => {
    // Proves the T record's total cannot silently disagree with the B records, and no field overflows.
    await expect(all(fireRecords({ ...file, payeeCount: 2 }, from([payee("1099-K", "CA", 1)])))).rejects.toThrow(/announced 2/);
    expect(() => bRecord(file, payee("1099-K", "CA", 10 ** 12), 1)).toThrow(/does not fit/);
    expect(() => bRecord(file, payee("1099-K", "CA", -1), 1)).toThrow(/non-negative/);
  });
});
