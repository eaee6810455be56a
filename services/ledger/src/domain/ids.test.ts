import { describe, expect, it } from "vitest";
import { sortableIds } from "./ids.ts";

describe("sortableIds", () => {
  it("have newId's shape, are unique, and sort by creation order", () => {
    // Proves the batch path's ids stay valid prefixed ids while landing in index order.
    const a = sortableIds("ent", 500, 1_700_000_000_000);
    const b = sortableIds("ent", 500, 1_700_000_000_001);
    for (const id of [...a, ...b]) expect(id).toMatch(/^ent_[0-9a-z]{24}$/);
    expect(new Set([...a, ...b]).size).toBe(1000);
    const all = [...a, ...b];
    expect([...all].sort()).toEqual(all);
  });
});
