/** The console's pure parts: password hashing, HTML escaping, money and id rendering, roles. */
import { describe, expect, it } from "vitest";
import { html } from "../src/domain/html.ts";
import { hashPassword, verifyPassword } from "../src/domain/passwords.ts";
import { may } from "../src/domain/roles.ts";
import { formatCents, value } from "../src/pages/render.ts";

describe("passwords", () => {
  it("verifies the password a hash was made from and nothing else", async () => {
    // Proves scrypt round-trips, salts each hash, and refuses a wrong or malformed one.
    const a = await hashPassword("correct horse battery staple");
    const b = await hashPassword("correct horse battery staple");
    expect(a).not.toBe(b);
    expect(await verifyPassword("correct horse battery staple", a)).toBe(true);
    expect(await verifyPassword("correct horse battery stapl", a)).toBe(false);
    expect(await verifyPassword("correct horse battery staple", "scrypt$17$8$1$bad")).toBe(false);
  });
});

describe("html", () => {
  it("escapes every interpolated value unless it is a fragment built the same way", () => {
    // Proves a value from a service cannot inject markup.
    const evil = `<script>alert("x")</script>'`;
    expect(html`<p>${evil}</p>`.value).toBe("<p>&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&#39;</p>");
    expect(html`<div>${html`<b>${evil}</b>`}</div>`.value).toContain("<b>&lt;script&gt;");
  });
});

describe("rendering", () => {
  it("formats cents as money and links generated ids to their find page", () => {
    // Proves amounts come from cents exactly and ids become links, client-chosen strings do not.
    expect(formatCents(123456789)).toBe("1,234,567.89");
    expect(formatCents(-5)).toBe("-0.05");
    expect(value(1999, "amount_cents").value).toContain("19.99");
    const id = "po_abcdefghijklmnopqrstuvwx";
    expect(value(id, "id").value).toBe(`<a class="id" href="/console/find?id=${id}">${id}</a>`);
    expect(value("creator-42", "participant_id").value).toBe("creator-42");
  });

  it("grants each role its own permissions", () => {
    // Proves viewer < reviewer < admin.
    expect([may("viewer", "read"), may("viewer", "review"), may("reviewer", "review"), may("reviewer", "manage"), may("admin", "manage")]).toEqual([
      true,
      false,
      true,
      false,
      true,
    ]);
  });
});
