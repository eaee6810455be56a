// cutAt: parts of at most n UTF-8 bytes, never splitting a character, that join back into the text.
import { describe, expect, it } from "vitest";
import { cutAt } from "./exports.ts";

function cutAll(text: string, max: number): string[] {
  const parts: string[] = [];
  let rest = text;
  while (rest.length > 0) {
    const [head, tail] = cutAt(rest, max);
    parts.push(head);
    rest = tail;
  }
  return parts;
}

describe("cutAt", () => {
  it("keeps ASCII whole below the limit and cuts it at the limit", () => {
    expect(cutAt("abc", 3)).toEqual(["abc", ""]);
    expect(cutAt("abcdef", 4)).toEqual(["abcd", "ef"]);
  });

  it("cuts multi-byte text at character boundaries, each part within the limit, joining back to the text", () => {
    const text = "Zoë Ångström, 東京 and 🎵 rows,".repeat(20);
    for (const max of [4, 5, 7, 64, 1_024]) {
      const parts = cutAll(text, max);
      expect(parts.join("")).toBe(text);
      for (const p of parts) {
        expect(Buffer.byteLength(p)).toBeLessThanOrEqual(max);
        expect(p.length).toBeGreaterThan(0);
        // No lone surrogate at either end.
        expect(Buffer.from(p, "utf8").toString("utf8")).toBe(p);
      }
    }
  });
});
