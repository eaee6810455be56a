// Proves `admin find` on the tax service's rows (admin.find.rows, as the CLI's walk sends it): a document found by
// its id, with the original it corrects; a participant's W-9 profile found within its org and environment, showing
// the TIN's last four digits and never the sealed TIN; nothing for another org.
import { ADMIN_FANOUT_OPERATIONS, rpcSubject, type FindRowsReply } from "@treasury/contracts";
import { rpcCall } from "@treasury/service-kit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { authFor, newOrg, ok, sales, startTax, type TaxHarness } from "../test-support.ts";

let h: TaxHarness;

beforeAll(async () => {
  h = await startTax();
});
afterAll(async () => {
  await h?.close();
});

const find = async (nodes: unknown[], seed = true) =>
  ok(await rpcCall(h.nc, rpcSubject(h.env.prefix, "tax", ADMIN_FANOUT_OPERATIONS.findRows), { nodes, seed }, { timeoutMs: 20_000 }))
    .body as unknown as FindRowsReply;

describe("admin find", () => {
  it("answers a document by its taxdoc_ id, its correction, and the participant's profile without the sealed TIN", async () => {
    const org = newOrg();
    h.setSources(org, false, "cr_find", sales("find", 2025, 3, 10_000));
    const auth = authFor(org);
    ok(await h.call("putTaxSettings", auth, { body: { tax_year: 2025, form: "1099-K", threshold_cents: 100, threshold_transactions: 1 } }));
    const profile = {
      legal_name: "Find Me",
      tin_type: "ssn",
      tin: "123-45-6789",
      address: { line1: "1 Find Lane", city: "Denver", state: "CO", postal_code: "80202" },
      certified: true,
    };
    ok(await h.call("putTaxProfile", auth, { params: { participant_id: "cr_find" }, body: profile }));
    ok(await h.call("generateTaxDocuments", auth, { body: { tax_year: 2025 } }));
    const [doc] = ok(await h.call("listTaxDocuments", auth, { query: { tax_year: "2025" } })).body["tax_documents"] as { id: string }[];
    const id = doc?.id ?? "";
    expect(id).toMatch(/^taxdoc_[0-9a-z]{24}$/);

    const byId = await find([{ kind: "tax_document", id }]);
    expect(byId.hits).toEqual([
      {
        table: "tax.documents",
        follow: true,
        row: expect.objectContaining({ id, participant_id: "cr_find", status: "draft", gross_cents: 30_000, recipient_tin_last4: "6789" }),
      },
    ]);

    ok(await h.call("markTaxDocumentFiled", auth, { params: { document_id: id } }));
    const successor = (ok(await h.call("correctTaxDocument", auth, { params: { document_id: id }, body: {} })).body["tax_document"] as { id: string }).id;
    const both = await find([{ kind: "tax_document", id: successor }], false);
    expect(both.hits.map((x) => [x.row["id"], x.row["corrects"]])).toEqual([[successor, id]]);
    expect((await find([{ kind: "tax_document", id }])).hits[0]?.row).toMatchObject({ status: "corrected", corrected_by: successor });

    const byParticipant = await find([{ kind: "participant", id: "cr_find", scope: { orgId: org, livemode: false } }], false);
    expect(byParticipant.hits.map((x) => x.table)).toEqual(["tax.profiles"]);
    expect(byParticipant.hits[0]?.row).toMatchObject({ participant_id: "cr_find", tin_last4: "6789" });
    expect(byParticipant.hits[0]?.row).not.toHaveProperty("tin_sealed");
    expect(JSON.stringify(byParticipant)).not.toContain("123456789");
    expect((await find([{ kind: "participant", id: "cr_find", scope: { orgId: newOrg(), livemode: false } }])).hits).toEqual([]);
    expect((await find([{ kind: "tax_document", id: "taxdoc_000000000000000000000000" }])).hits).toEqual([]);
  });
});
