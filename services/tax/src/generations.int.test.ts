// Proves generation as a durable job on real PostgreSQL and NATS: a year that does not end within the request's
// wait is answered 202 with the running job, generating again while it runs answers the same job, and polling it
// shows it succeed with the year's counts; a job whose runner stopped mid-year (its lease ran out) is taken up by
// the next pass and goes on from the page it had reached, not from the start.
import { waitFor } from "@treasury/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { authFor, err, newOrg, ok, sales, startTax, type TaxHarness } from "./test-support.ts";

type Body = Record<string, unknown>;
const YEAR = 2025;
let h: TaxHarness;

beforeAll(async () => {
  h = await startTax({ env: { TAX_GENERATE_PAGE_SIZE: "2", TAX_GENERATE_WAIT_MS: "200", TAX_GENERATION_INTERVAL_MS: "100", TAX_GENERATION_LEASE_MS: "1000" } });
});
afterAll(async () => {
  await h?.close();
});

async function seed(org: string): Promise<void> {
  for (const p of ["cr_a", "cr_b", "cr_c", "cr_d", "cr_e"]) h.setSources(org, false, p, sales(p.slice(3), YEAR, 3, 10_000));
  ok(await h.call("putTaxSettings", authFor(org), { body: { tax_year: YEAR, form: "1099-K", threshold_cents: 100, threshold_transactions: 1 } }));
}

const poll = async (org: string, id: string) =>
  ok(await h.call("getTaxGeneration", authFor(org), { params: { generation_id: id } })).body["generation"] as Body;

async function participants(org: string): Promise<string[]> {
  const docs = ok(await h.call("listTaxDocuments", authFor(org), { query: { tax_year: String(YEAR), limit: "100" } })).body["tax_documents"] as Body[];
  return docs.map((d) => String(d["participant_id"])).sort();
}

describe("generation jobs", () => {
  it("answers 202 with the running job when the year does not end within the wait, the same job again, and it succeeds", async () => {
    const org = newOrg();
    await seed(org);
    const release = h.holdFigures();
    let id = "";
    try {
      const first = ok(await h.call("generateTaxDocuments", authFor(org), { body: { tax_year: YEAR } }));
      expect(first.status).toBe(202);
      const job = first.body["generation"] as Body;
      expect(job).toMatchObject({ object: "tax_generation", status: "running", tax_year: YEAR, created: 0, finished_at: null });
      id = String(job["id"]);
      expect(id).toMatch(/^taxgen_[0-9a-z]{24}$/);
      const again = ok(await h.call("generateTaxDocuments", authFor(org), { body: { tax_year: YEAR } }));
      expect(again).toMatchObject({ status: 202, body: { generation: { id, status: "running" } } });
    } finally {
      release();
    }
    await waitFor(async () => (await poll(org, id))["status"] === "succeeded", { timeoutMs: 20_000 });
    expect(await poll(org, id)).toMatchObject({ participants_read: 5, created: 5, updated: 0, unchanged: 0, last_error: null });
    expect(await participants(org)).toEqual(["cr_a", "cr_b", "cr_c", "cr_d", "cr_e"]);
    // Another org does not see the job.
    expect(err(await h.call("getTaxGeneration", authFor(newOrg()), { params: { generation_id: id } })).code).toBe("tax_generation_not_found");
    expect(err(await h.call("getTaxGeneration", authFor(org), { params: { generation_id: "nope" } })).code).toBe("tax_generation_not_found");
  });

  it("takes up a job whose runner stopped and goes on after the page it had reached", async () => {
    const org = newOrg();
    await seed(org);
    // A runner stopped after its first page (cr_a, cr_b): its cursor and counts committed, its lease run out.
    const id = "taxgen_resume000000000000000000";
    await h.env.adminSql`
      insert into tax.generations (id, org_id, livemode, tax_year, status, after_participant, participants_read, created, lease_until)
      values (${id}, ${org}, false, ${YEAR}, 'running', 'cr_b', 2, 2, now() - interval '1 second')`;
    await waitFor(async () => (await poll(org, id))["status"] === "succeeded", { timeoutMs: 20_000 });
    expect(await poll(org, id)).toMatchObject({ participants_read: 5, created: 5 });
    // Only the pages after the cursor were generated: cr_a and cr_b were the stopped runner's (not rolled back here).
    expect(await participants(org)).toEqual(["cr_c", "cr_d", "cr_e"]);
  });

  it("refuses a year that has not begun before recording a job", async () => {
    const org = newOrg();
    expect(err(await h.call("generateTaxDocuments", authFor(org), { body: { tax_year: 2999 } })).code).toBe("invalid_tax_year");
    const [row] = await h.env.adminSql<{ n: number }[]>`select count(*)::int as n from tax.generations where org_id = ${org}`;
    expect(row?.n).toBe(0);
  });
});
