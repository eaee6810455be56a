// Proves exports beyond one API answer on real PostgreSQL and NATS: the direct export of a year larger than
// TAX_EXPORT_BYTES_MAX is refused, the same year as an export job is cut into parts no larger than that, each
// downloaded on its own, which joined in order are exactly the streamed file (a FIRE file of 750-byte records, T
// first, F last, a B record per payee; JSON equal to the direct stream); parts are sealed at rest (no TIN in the
// table); other orgs see nothing.
import { waitFor } from "@treasury/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { exportDocuments } from "./usecases/export.ts";
import { authFor, err, newOrg, ok, sales, startTax, type TaxHarness } from "./test-support.ts";

type Body = Record<string, unknown>;
const YEAR = 2025;
const MAX = 1_024;
const PARTICIPANTS = ["cr_a", "cr_b", "cr_c", "cr_d", "cr_e"];
let h: TaxHarness;

beforeAll(async () => {
  h = await startTax({ env: { TAX_EXPORT_BYTES_MAX: String(MAX), TAX_GENERATION_INTERVAL_MS: "100" } });
});
afterAll(async () => {
  await h?.close();
});

async function seed(org: string): Promise<void> {
  const auth = authFor(org);
  ok(await h.call("putTaxSettings", auth, { body: { tax_year: YEAR, form: "1099-K", threshold_cents: 100, threshold_transactions: 1 } }));
  for (const [i, p] of PARTICIPANTS.entries()) {
    h.setSources(org, false, p, sales(p.slice(3), YEAR, 3, 10_000 + i));
    const profile = {
      legal_name: `Creator ${p}`,
      tin_type: "ssn",
      tin: `52${i}-11-000${i + 1}`,
      address: { line1: `${i} Export Road`, city: "Denver", state: "CO", postal_code: "80202" },
      certified: true,
    };
    ok(await h.call("putTaxProfile", auth, { params: { participant_id: p }, body: profile }));
  }
  expect(ok(await h.call("generateTaxDocuments", auth, { body: { tax_year: YEAR } })).body["generation"]).toMatchObject({ created: 5 });
}

/** An export job run to its end: its body, then every part's text, in order. */
async function exported(org: string, format: string): Promise<{ job: Body; parts: string[] }> {
  const auth = authFor(org);
  const started = ok(await h.call("createTaxExport", auth, { body: { tax_year: YEAR, format } }));
  expect([200, 202]).toContain(started.status);
  const id = String((started.body["export"] as Body)["id"]);
  expect(id).toMatch(/^taxexp_[0-9a-z]{24}$/);
  const poll = async () => ok(await h.call("getTaxExport", auth, { params: { export_id: id } })).body["export"] as Body;
  await waitFor(async () => (await poll())["status"] === "succeeded", { timeoutMs: 20_000 });
  const job = await poll();
  const parts: string[] = [];
  for (let n = 1; n <= Number(job["parts"]); n++) {
    const file = ok(await h.call("getTaxExportPart", auth, { params: { export_id: id, part: String(n) } })).body["file"] as Body;
    expect(file["filename"]).toBe(`tax-${YEAR}-${format}.part${n}of${String(job["parts"])}.${format === "fire" ? "txt" : format}`);
    parts.push(String(file["content"]));
  }
  return { job, parts };
}

async function streamed(org: string, format: "csv" | "json" | "fire"): Promise<string> {
  let text = "";
  for await (const chunk of exportDocuments(h.svc.deps, { orgId: org, livemode: false }, YEAR, format)) text += chunk;
  return text;
}

describe("exports in parts", () => {
  it("cuts a FIRE file larger than one answer into parts that join into the file", async () => {
    const org = newOrg();
    await seed(org);
    expect(err(await h.call("exportTaxDocuments", authFor(org), { query: { tax_year: String(YEAR), format: "fire" } })).code).toBe("export_too_large");

    const { job, parts } = await exported(org, "fire");
    const file = parts.join("");
    expect(parts.length).toBe(Math.ceil(file.length / MAX));
    for (const p of parts) expect(Buffer.byteLength(p)).toBeLessThanOrEqual(MAX);
    expect(job).toMatchObject({ object: "tax_export", format: "fire", tax_year: YEAR, parts: parts.length, bytes: file.length, last_error: null });
    expect(file).toBe(await streamed(org, "fire"));
    // The reader's view: 750-byte records ending in CR LF, T first, F last, one B per payee.
    expect(file.length % 750).toBe(0);
    const types = Array.from({ length: file.length / 750 }, (_, i) => file[i * 750]);
    expect(file.slice(748, 750)).toBe("\r\n");
    expect(types[0]).toBe("T");
    expect(types[types.length - 1]).toBe("F");
    expect(types.filter((t) => t === "B")).toHaveLength(5);
    expect(file).toContain("520110001");

    // Sealed at rest: no full TIN in the parts table.
    const rows = await h.env.adminSql<{ content_sealed: string }[]>`select content_sealed from tax.export_parts where export_id = ${String(job["id"])}`;
    expect(rows).toHaveLength(parts.length);
    expect(rows.some((r) => r.content_sealed.includes("520110001"))).toBe(false);

    const id = String(job["id"]);
    expect(err(await h.call("getTaxExportPart", authFor(org), { params: { export_id: id, part: String(parts.length + 1) } })).code).toBe(
      "tax_export_part_not_found",
    );
    expect(err(await h.call("getTaxExport", authFor(newOrg()), { params: { export_id: id } })).code).toBe("tax_export_not_found");
    expect(err(await h.call("getTaxExportPart", authFor(org, true), { params: { export_id: id, part: "1" } })).code).toBe("tax_export_not_found");
  });

  it("cuts JSON the same way (the parts joined parse), and refuses a year not begun before recording a job", async () => {
    const org = newOrg();
    await seed(org);
    const { parts } = await exported(org, "json");
    expect(parts.length).toBeGreaterThan(1);
    expect(parts.join("")).toBe(await streamed(org, "json"));
    expect((JSON.parse(parts.join("")) as { tax_documents: unknown[] }).tax_documents).toHaveLength(5);
    expect(err(await h.call("createTaxExport", authFor(org), { body: { tax_year: 2999, format: "csv" } })).code).toBe("invalid_tax_year");
    const [row] = await h.env.adminSql<{ n: number }[]>`select count(*)::int as n from tax.exports where org_id = ${org} and tax_year = 2999`;
    expect(row?.n).toBe(0);
  });
});
