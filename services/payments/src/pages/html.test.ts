// Proves the page helpers escape every HTML-significant character, format cents exactly and parse form amounts strictly.
import { describe, expect, it } from "vitest";
import { cardDigits, esc, usd } from "./html.ts";
import { parseDollars } from "./wallet-page.ts";

describe("page helpers", () => {
  // Proves markup and attribute breakers in user data come out inert.
  it("escapes", () => {
    expect(esc(`<script>alert("x")</script>' onmouseover=x \``)).toBe("&#60;script&#62;alert(&#34;x&#34;)&#60;/script&#62;&#39; onmouseover&#61;x &#96;");
    expect(esc(null)).toBe("");
  });

  // Proves cents render without floating point (1 cent, thousands, negatives).
  it("formats cents as dollars", () => {
    expect(usd(1)).toBe("$0.01");
    expect(usd(123_456_789)).toBe("$1,234,567.89");
    expect(usd(-250)).toBe("-$2.50");
  });

  // Proves the top-up amount parser takes at most two decimals, refuses zero and junk, and never uses floats for cents.
  it("parses dollars", () => {
    expect(parseDollars("12.34")).toBe(1234);
    expect(parseDollars("$0.1")).toBe(10);
    expect(parseDollars(" 7 ")).toBe(700);
    expect(parseDollars("0.29")).toBe(29);
    for (const bad of ["", "0", "0.00", "1.234", "-1", "1e3", "abc", undefined]) expect(parseDollars(bad)).toBeUndefined();
    expect(cardDigits("4242 4242-4242 4242")).toBe("4242424242424242");
  });
});
