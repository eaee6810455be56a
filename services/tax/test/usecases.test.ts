import type { Tenant } from "@treasury/contracts";
import { describe, expect, it } from "vitest";
import { correctDocument, markFiled } from "../src/usecases/documents.ts";
import { exportDocuments, exportToText } from "../src/usecases/export.ts";
import { generateDocuments } from "../src/usecases/generate.ts";
import { getCalculation, putSettings } from "../src/usecases/calculations.ts";
import { putProfile } from "../src/usecases/profiles.ts";
import { fakes, figuresOf, type Fakes } from "./fakes.ts";

const org: Tenant = { orgId: "org_1", livemode: false };
const other: Tenant = { orgId: "org_2", livemode: false };
const w9 = (tin: string) => ({
  legal_name: "Ada",
  tin_type: "ssn" as const,
  tin,
  address: { line1: "1 A St", city: "Austin", state: "TX", postal_code: "78701", country: "US" as const },
  certified: true as const,
});

function seeded(): Fakes {
  const f = fakes();
  for (const p of ["a", "b", "c", "d", "e"]) f.participants.add(`org_1|false|${p}`);
  // Five participants with activity, a page of two at a time: three over the federal 1099-K figures.
  f.figures.set("org_1|false|2025", [
    figuresOf("a", 2_500_000, 250),
    figuresOf("b", 2_000_000, 300),
    figuresOf("c", 3_000_000, 201, 40_000),
    figuresOf("d", 9_000_000, 200),
    figuresOf("e", 2_000_001, 201),
  ]);
  return f;
}

async function text(gen: AsyncIterable<string>): Promise<string> {
  let out = "";
  for await (const c of gen) out += c;
  return out;
}

describe("generation", () => {
  it("makes one draft per participant over the threshold across pages, and generating again changes nothing", async () => {
    // Proves paging through the ledger, the federal default rule, and idempotence (no duplicates, no second events).
    const f = seeded();
    expect(await generateDocuments(f.deps, org, 2025)).toMatchObject({ participants_read: 5, created: 3, updated: 0 });
    expect(f.docs.map((d) => d.participantId).sort()).toEqual(["a", "c", "e"]);
    expect(f.events.filter((e) => e.type === "tax.document.generated")).toHaveLength(3);
    expect(await generateDocuments(f.deps, org, 2025)).toMatchObject({ created: 0, updated: 0, unchanged: 3 });
    expect(f.events).toHaveLength(3);
    expect(f.docs).toHaveLength(3);
  });

  it("updates a draft whose figures changed, removes one now under the threshold, leaves a filed one", async () => {
    // Proves what "generating again updates drafts" means for each kind of current document.
    const f = seeded();
    await generateDocuments(f.deps, org, 2025);
    await markFiled(f.deps, org, f.docs.find((d) => d.participantId === "e")?.id ?? "");
    f.figures.set("org_1|false|2025", [figuresOf("a", 2_600_000, 260), figuresOf("c", 100, 1), figuresOf("e", 5_000_000, 500)]);
    expect(await generateDocuments(f.deps, org, 2025)).toMatchObject({ created: 0, updated: 1, removed: 1, filed: 1 });
    expect(f.docs.find((d) => d.participantId === "a")?.grossCents).toBe(2_600_000);
    expect(f.docs.find((d) => d.participantId === "e")?.grossCents).toBe(2_000_001);
    expect(f.docs.some((d) => d.participantId === "c")).toBe(false);
  });

  it("drafts a running year but files only an ended one, and refuses a year not begun, on the tenant's clock", async () => {
    // Proves invalid_tax_year comes before any ledger read, and tax_year_not_ended holds filing until January.
    const f = seeded();
    f.figures.set("org_1|false|2026", [figuresOf("a", 2_500_000, 250)]);
    await expect(generateDocuments(f.deps, org, 2027)).rejects.toMatchObject({ code: "invalid_tax_year" });
    await expect(generateDocuments(f.deps, org, 2026)).resolves.toMatchObject({ created: 1 });
    const draft = f.docs.find((d) => d.taxYear === 2026);
    await expect(markFiled(f.deps, org, draft?.id ?? "")).rejects.toMatchObject({ code: "tax_year_not_ended" });
    f.clock.now = new Date("2027-01-01T00:00:00Z");
    await expect(markFiled(f.deps, org, draft?.id ?? "")).resolves.toMatchObject({ status: "filed" });
  });

  it("applies the org's own settings, and another org sees none of it", async () => {
    // Proves settings are per tenant and year, and a 1099-NEC counts what was paid net of refunds.
    const f = seeded();
    await putSettings(f.deps, org, { tax_year: 2025, form: "1099-NEC", threshold_cents: 2_970_000 });
    await generateDocuments(f.deps, org, 2025);
    expect(f.docs.map((d) => [d.participantId, d.form]).sort()).toEqual([["d", "1099-NEC"]]);
    expect(await generateDocuments(f.deps, other, 2025)).toMatchObject({ participants_read: 0, created: 0 });
    await expect(putSettings(f.deps, org, { tax_year: 2025, form: "1099-NEC", threshold_transactions: 3 })).rejects.toMatchObject({ code: "validation_error" });
  });
});

describe("profiles and calculations", () => {
  it("seals the TIN bound to its row, keeps the last four, and refuses unknown participants and bad TINs", async () => {
    // Proves the profile never stores the plain TIN and the checks' order (the TIN before the ledger).
    const f = seeded();
    const { profile, created } = await putProfile(f.deps, org, "a", w9("401-87-3921"), "key_1");
    expect(created).toBe(true);
    expect(profile).toMatchObject({ tinLast4: "3921", certifiedBy: "key_1" });
    expect(profile.tinSealed).not.toContain("401873921");
    expect(f.deps.sealer?.open(profile.tinSealed, "")).toBe("401873921");
    await expect(putProfile(f.deps, org, "zz", w9("401-87-3921"), "key_1")).rejects.toMatchObject({ code: "participant_not_found" });
    await expect(putProfile(f.deps, org, "zz", w9("666-87-3921"), "key_1")).rejects.toMatchObject({ code: "invalid_tin" });
    await expect(putProfile({ ...f.deps, sealer: undefined }, org, "a", w9("401-87-3921"), "k")).rejects.toMatchObject({ code: "service_unavailable" });
  });

  it("answers the figures with the form that applies and the profile's status", async () => {
    // Proves the calculation of a participant over and one under the threshold, and unknown ones.
    const f = seeded();
    await putProfile(f.deps, org, "a", w9("401-87-3921"), "key_1");
    expect(await getCalculation(f.deps, org, "a", 2025)).toMatchObject({
      form: "1099-K",
      meetsThreshold: true,
      profileStatus: "certified",
      grossCents: 2_500_000,
    });
    expect(await getCalculation(f.deps, org, "b", 2025)).toMatchObject({ form: "none", meetsThreshold: false, profileStatus: "missing" });
    await expect(getCalculation(f.deps, org, "zz", 2025)).rejects.toMatchObject({ code: "participant_not_found" });
    await expect(getCalculation(f.deps, org, "a", 2030)).rejects.toMatchObject({ code: "invalid_tax_year" });
  });
});

describe("filing, correction and export", () => {
  it("files a draft once, corrects a filed document into a linked successor, and refuses the wrong states", async () => {
    // Proves the document state machine and its events.
    const f = seeded();
    await generateDocuments(f.deps, org, 2025);
    const a = f.docs.find((d) => d.participantId === "a");
    await expect(correctDocument(f.deps, org, a?.id ?? "", undefined)).rejects.toMatchObject({ code: "tax_document_state" });
    await markFiled(f.deps, org, a?.id ?? "");
    await expect(markFiled(f.deps, org, a?.id ?? "")).rejects.toMatchObject({ code: "tax_document_state" });
    const { original, corrected } = await correctDocument(f.deps, org, a?.id ?? "", "late sale");
    expect(original).toMatchObject({ status: "corrected", correctedBy: corrected.id });
    expect(corrected).toMatchObject({ status: "draft", corrects: original.id, correctionReason: "late sale" });
    await expect(correctDocument(f.deps, org, original.id, undefined)).rejects.toMatchObject({
      code: "tax_document_state",
      hint: `Its correction is ${corrected.id}`,
    });
    await expect(markFiled(f.deps, other, corrected.id)).rejects.toMatchObject({ code: "tax_document_not_found" });
    expect(f.events.map((e) => e.type)).toEqual([...Array(3).fill("tax.document.generated"), "tax.document.filed", "tax.document.corrected"]);
  });

  it("exports the current documents as CSV, JSON and FIRE, and refuses one answer past its size", async () => {
    // Proves every format carries the same documents, FIRE opens the TIN, and the API's bound holds.
    const f = seeded();
    await putProfile(f.deps, org, "a", w9("401-87-3921"), "key_1");
    await generateDocuments(f.deps, org, 2025);
    const csv = await text(exportDocuments(f.deps, org, 2025, "csv"));
    expect(csv.trim().split("\r\n")).toHaveLength(4);
    expect(csv).not.toContain("401873921");
    const json = JSON.parse(await text(exportDocuments(f.deps, org, 2025, "json"))) as { tax_documents: unknown[] };
    expect(json.tax_documents).toHaveLength(3);
    const fire = await text(exportDocuments(f.deps, org, 2025, "fire"));
    expect(fire.length).toBe(750 * 7);
    expect(fire).toContain("401873921");
    await expect(exportToText({ ...f.deps, exportBytesMax: 2_000 }, org, 2025, "fire")).rejects.toMatchObject({ code: "export_too_large" });
  });
});
