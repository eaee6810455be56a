// Proves generation on real PostgreSQL and NATS, the ledger a stand-in that pages as the ledger does: generating
// again updates drafts and never duplicates (pages of two participants, so every page boundary is crossed), each
// document's sources are its participant's transactions and sum to its figures, a filed document's correction
// links both ways, and orgs and environments never see each other's documents; and the W-9 status payouts asks.
import { internalSubject, schemas } from "@treasury/contracts";
import { rpcCall } from "@treasury/service-kit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { authFor, err, newOrg, ok, refund, sales, startTax, type TaxHarness } from "./test-support.ts";

type Body = Record<string, unknown>;
type Doc = {
  id: string;
  participant_id: string;
  form: string;
  status: string;
  amounts: Body;
  corrects_document_id: string | null;
  corrected_by_document_id: string | null;
  sources?: { transaction_id: string; role: string; amount_cents: number }[];
};
const YEAR = 2025;
let h: TaxHarness;

beforeAll(async () => {
  h = await startTax({ env: { TAX_GENERATE_PAGE_SIZE: "2" } });
});
afterAll(async () => {
  await h?.close();
});

/** 1099-K over $100.00 and more than 2 transactions, so small figures cross it. */
async function lowThreshold(orgId: string, livemode = false): Promise<void> {
  ok(
    await h.call("putTaxSettings", authFor(orgId, livemode), { body: { tax_year: YEAR, form: "1099-K", threshold_cents: 10_000, threshold_transactions: 2 } }),
  );
}

/** A small year ends within the request's wait: answered 200 with the finished generation. */
async function generate(orgId: string, livemode = false): Promise<Body> {
  const reply = ok(await h.call("generateTaxDocuments", authFor(orgId, livemode), { body: { tax_year: YEAR } }));
  expect(reply.status).toBe(200);
  expect(reply.body["generation"]).toMatchObject({ status: "succeeded", object: "tax_generation" });
  return reply.body["generation"] as Body;
}

async function documents(orgId: string, livemode = false): Promise<Doc[]> {
  const body = ok(await h.call("listTaxDocuments", authFor(orgId, livemode), { query: { tax_year: String(YEAR), limit: "100" } })).body;
  return (body["tax_documents"] as Doc[]).sort((a, b) => (a.participant_id < b.participant_id ? -1 : 1));
}

async function storedRows(orgId: string): Promise<number> {
  const [row] = await h.env.adminSql<{ n: number }[]>`select count(*)::int as n from tax.documents where org_id = ${orgId}`;
  return row?.n ?? 0;
}

/** Five creators: three over the threshold, one under it (two sales), one with nothing in the year. */
function seed(orgId: string, livemode: boolean, cents: number): void {
  h.setSources(orgId, livemode, "cr_a", [...sales("a", YEAR, 3, cents), refund("a", YEAR, 1_500)]);
  // 1,203 sales: the sources are read from the ledger in two pages.
  h.setSources(orgId, livemode, "cr_b", sales("b", YEAR, 1_203, cents));
  h.setSources(orgId, livemode, "cr_c", sales("c", YEAR, 2, cents));
  h.setSources(orgId, livemode, "cr_d", sales("d", YEAR, 5, cents));
  h.setSources(orgId, livemode, "cr_e", sales("e", YEAR - 1, 9, cents));
}

describe("generation", () => {
  it("makes one document per participant over the threshold, and again updates drafts without duplicating", async () => {
    const org = newOrg();
    seed(org, false, 10_000);
    await lowThreshold(org);
    expect(await generate(org)).toMatchObject({ tax_year: YEAR, participants_read: 4, created: 3, updated: 0, unchanged: 0, removed: 0 });
    const first = await documents(org);
    expect(first.map((d) => d.participant_id)).toEqual(["cr_a", "cr_b", "cr_d"]);
    for (const d of first) {
      const f = h.figuresOf(org, false, d.participant_id, YEAR);
      expect(d).toMatchObject({ form: "1099-K", status: "draft" });
      expect(d.amounts).toMatchObject({
        box_1a_cents: f.gross_cents,
        box_3_transactions: f.transaction_count,
        box_5_cents: f.monthly_cents,
        refunds_cents: f.refunds_cents,
      });
    }
    expect(first[0]?.amounts).toMatchObject({ box_1a_cents: 30_000, refunds_cents: 1_500, box_3_transactions: 3 });

    expect(await generate(org)).toMatchObject({ created: 0, updated: 0, unchanged: 3 });
    expect(await storedRows(org)).toBe(3);

    // cr_d gains a sale, cr_c crosses the threshold, cr_a drops under it (its draft goes): one of each.
    h.setSources(org, false, "cr_d", sales("d", YEAR, 6, 10_000));
    h.setSources(org, false, "cr_c", sales("c", YEAR, 3, 10_000));
    h.setSources(org, false, "cr_a", sales("a", YEAR, 1, 10_000));
    expect(await generate(org)).toMatchObject({ created: 1, updated: 1, unchanged: 1, removed: 1 });
    const after = await documents(org);
    expect(after.map((d) => d.participant_id)).toEqual(["cr_b", "cr_c", "cr_d"]);
    const d = after.find((x) => x.participant_id === "cr_d");
    expect(d?.id).toBe(first.find((x) => x.participant_id === "cr_d")?.id);
    expect(d?.amounts["box_1a_cents"]).toBe(60_000);
    expect(await storedRows(org)).toBe(3);
  });

  it("answers each document's sources: its participant's transactions of the year, summing to its figures", async () => {
    const org = newOrg();
    seed(org, false, 2_575);
    await lowThreshold(org);
    await generate(org);
    for (const listed of await documents(org)) {
      const doc = ok(await h.call("getTaxDocument", authFor(org), { params: { document_id: listed.id }, query: { include: "sources" } })).body[
        "tax_document"
      ] as Doc;
      const sources = doc.sources ?? [];
      const f = h.figuresOf(org, false, doc.participant_id, YEAR);
      const letter = doc.participant_id.slice(3);
      expect(sources.every((s) => s.transaction_id.startsWith(`txn_${letter}_`))).toBe(true);
      expect(new Set(sources.map((s) => s.transaction_id)).size).toBe(sources.length);
      const sum = (role: string) => sources.filter((s) => s.role === role).reduce((n, s) => n + s.amount_cents, 0);
      expect(sum("sale")).toBe(doc.amounts["box_1a_cents"]);
      expect(sum("refund")).toBe(doc.amounts["refunds_cents"]);
      expect(sources.filter((s) => s.role === "sale")).toHaveLength(f.transaction_count);
    }
    const b = (await documents(org)).find((x) => x.participant_id === "cr_b");
    expect(b?.amounts["box_1a_cents"]).toBe(1_203 * 2_575);
  });

  it("corrects a filed document with a new draft linked both ways, and generating leaves the filed one alone", async () => {
    const org = newOrg();
    seed(org, false, 10_000);
    await lowThreshold(org);
    await generate(org);
    const a = (await documents(org)).find((x) => x.participant_id === "cr_a");
    const filed = ok(await h.call("markTaxDocumentFiled", authFor(org), { params: { document_id: a?.id ?? "" } })).body["tax_document"] as Doc;
    expect(filed.status).toBe("filed");
    h.setSources(org, false, "cr_a", [...sales("a", YEAR, 3, 10_000), refund("a", YEAR, 4_000)]);
    expect(await generate(org)).toMatchObject({ filed: 1, created: 0 });
    const corrected = ok(await h.call("correctTaxDocument", authFor(org), { params: { document_id: filed.id }, body: { reason: "refund posted late" } }));
    expect(corrected.status).toBe(201);
    const successor = corrected.body["tax_document"] as Doc;
    expect(successor).toMatchObject({ status: "draft", corrects_document_id: filed.id, amounts: { refunds_cents: 4_000 } });
    expect(corrected.body["original_document"]).toMatchObject({ id: filed.id, status: "corrected", corrected_by_document_id: successor.id });
    expect(err(await h.call("correctTaxDocument", authFor(org), { params: { document_id: filed.id }, body: {} })).code).toBe("tax_document_state");
    // The current documents still number one per participant; the original is kept.
    expect((await documents(org)).filter((x) => x.participant_id === "cr_a").map((x) => x.status)).toEqual(expect.arrayContaining(["draft", "corrected"]));
    expect(await storedRows(org)).toBe(4);
  });
});

describe("isolation", () => {
  it("keeps orgs and environments apart: the same participant ids, each tenant's own figures and documents", async () => {
    const one = newOrg();
    const two = newOrg();
    seed(one, false, 10_000);
    seed(one, true, 20_000);
    seed(two, false, 30_000);
    for (const [org, live] of [
      [one, false],
      [one, true],
      [two, false],
    ] as const)
      await lowThreshold(org, live);
    await generate(one, false);
    expect(await documents(one, true)).toEqual([]);
    expect(await documents(two, false)).toEqual([]);
    const mine = await documents(one, false);
    const id = mine[0]?.id ?? "";
    expect(err(await h.call("getTaxDocument", authFor(two), { params: { document_id: id } })).code).toBe("tax_document_not_found");
    expect(err(await h.call("getTaxDocument", authFor(one, true), { params: { document_id: id } })).code).toBe("tax_document_not_found");
    expect(err(await h.call("markTaxDocumentFiled", authFor(two), { params: { document_id: id } })).code).toBe("tax_document_not_found");

    await generate(one, true);
    await generate(two, false);
    const box = (docs: { amounts: Body }[]) => docs.map((d) => d.amounts["box_1a_cents"]);
    expect(box(await documents(one, false))).toEqual([30_000, 12_030_000, 50_000]);
    expect(box(await documents(one, true))).toEqual([60_000, 24_060_000, 100_000]);
    expect(box(await documents(two, false))).toEqual([90_000, 36_090_000, 150_000]);
    expect((await documents(one, false)).map((d) => d.id)).toEqual(mine.map((d) => d.id));
  });
});

describe("W-9 status for payout eligibility", () => {
  it("answers svc.tax.internal.taxProfileStatus: certified with its time once a W-9 is stored, per org and environment", async () => {
    const org = newOrg();
    h.setSources(org, false, "cr_w9", sales("w9", YEAR, 1, 100));
    const ask = async (orgId: string, livemode = false) =>
      ok(
        await rpcCall(
          h.nc,
          internalSubject(h.env.prefix, "tax", schemas.TAX_PROFILE_STATUS_OPERATION),
          { org_id: orgId, livemode, participant_id: "cr_w9" },
          { timeoutMs: 20_000 },
        ),
      ).body["tax_profile"];
    expect(await ask(org)).toEqual({ certified: false, certified_at: null });
    const profile = {
      legal_name: "W Nine",
      tin_type: "ein",
      tin: "12-3456789",
      address: { line1: "9 Form Way", city: "Boston", state: "MA", postal_code: "02110" },
      certified: true,
    };
    const put = ok(await h.call("putTaxProfile", authFor(org), { params: { participant_id: "cr_w9" }, body: profile })).body["tax_profile"] as Body;
    expect(await ask(org)).toEqual({ certified: true, certified_at: put["certified_at"] });
    expect(await ask(org, true)).toEqual({ certified: false, certified_at: null });
    expect(await ask(newOrg())).toEqual({ certified: false, certified_at: null });
  });
});
