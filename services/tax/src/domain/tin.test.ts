import { describe, expect, it } from "vitest";
import { tinProblem } from "./tin.ts";

describe("TIN rules", () => {
  it("accepts SSNs, ITINs and EINs the SSA and the IRS may issue", () => {
    // Proves valid numbers of each type pass, with and without dashes.
    for (const [type, tin] of [
      ["ssn", "123-45-6789"],
      ["ssn", "665999999"],
      ["ssn", "899-01-0001"],
      ["itin", "912-50-1234"],
      ["itin", "999-94-0000"],
      ["ein", "12-3456789"],
      ["ein", "990000000"],
    ] as const)
      expect([type, tin, tinProblem(type, tin)]).toEqual([type, tin, undefined]);
  });

  it("refuses SSN areas 000, 666 and 900–999, group 00 and serial 0000", () => {
    // Proves each SSA rule is checked on its own digits.
    expect(tinProblem("ssn", "000-12-3456")).toMatch(/area/);
    expect(tinProblem("ssn", "666-12-3456")).toMatch(/area/);
    expect(tinProblem("ssn", "900-12-3456")).toMatch(/area/);
    expect(tinProblem("ssn", "999-12-3456")).toMatch(/area/);
    expect(tinProblem("ssn", "123-00-3456")).toMatch(/group/);
    expect(tinProblem("ssn", "123-45-0000")).toMatch(/serial/);
  });

  it("refuses ITINs outside 9xx-(50–65|70–88|90–92|94–99) and EIN prefixes the IRS does not assign", () => {
    // Proves the range edges of ITIN middles and the list of unassigned EIN prefixes.
    for (const mid of ["49", "66", "69", "89", "93"]) expect(tinProblem("itin", `912${mid}1234`), mid).toMatch(/ITIN/);
    for (const mid of ["50", "65", "70", "88", "90", "92", "94", "99"]) expect(tinProblem("itin", `912${mid}1234`), mid).toBeUndefined();
    expect(tinProblem("itin", "812-70-1234")).toMatch(/starts with 9/);
    for (const p of ["00", "07", "08", "09", "17", "18", "19", "28", "29", "49", "69", "70", "78", "79", "89", "96", "97"])
      expect(tinProblem("ein", `${p}1234567`), p).toMatch(/prefix/);
  });

  it("never names the digits in a problem", () => {
    // Proves a refusal can be answered and logged without the TIN.
    for (const tin of ["000-12-3456", "123-00-3456", "123-45-0000", "07-1234567"]) {
      const problem = tinProblem(tin.length === 10 ? "ein" : "ssn", tin) ?? "";
      for (const part of ["123", "3456", "4567"]) expect(problem).not.toContain(part);
    }
  });
});
