/**
 * RPC handlers of tax: decode with the shared contracts → use case → named-key body; the handler picks the status.
 * Files (the PDF, the exports) are answered as `{file}` for the gateway to send outside the envelope.
 */
import { DomainError, ParticipantId, parseOrThrow, prefixedId, schemas, tenantOf } from "@treasury/contracts";
import type { Service } from "@treasury/service-kit";
import { presentCalculation, presentDocument } from "../domain/documents.ts";
import { presentExport } from "../domain/exports.ts";
import { presentGeneration } from "../domain/generations.ts";
import { presentSettings } from "../domain/thresholds.ts";
import { getCalculation, putSettings, settingsOf } from "../usecases/calculations.ts";
import { correctDocument, documentSources, getDocument, listDocuments, markFiled, yearSummary } from "../usecases/documents.ts";
import { CONTENT_TYPES, exportToText } from "../usecases/export.ts";
import { exportPart, getExport, startExport } from "../usecases/exports.ts";
import { getGeneration, startGeneration } from "../usecases/generations.ts";
import type { JobRunner, TaxDeps } from "../usecases/ports.ts";
import { getProfile, presentProfile, putProfile } from "../usecases/profiles.ts";
import { recipientCopyPdf } from "../usecases/recipient-copy.ts";

function param(params: Record<string, string>, name: string): string {
  const parsed = ParticipantId.safeParse(params[name]);
  if (!parsed.success)
    throw new DomainError("validation_error", `Invalid path parameter ${name}`, { details: [{ path: `params.${name}`, message: "must be a participant id" }] });
  return parsed.data;
}

function documentId(params: Record<string, string>): string {
  const parsed = prefixedId("taxdoc").safeParse(params["document_id"]);
  if (!parsed.success) {
    throw new DomainError("tax_document_not_found", `Tax document ${params["document_id"] ?? ""} not found`, {
      details: [{ path: "params.document_id", message: "must be a taxdoc_ id" }],
    });
  }
  return parsed.data;
}

/** What the generate answer leaves of the caller's deadline for the reply to travel back. */
const ANSWER_MARGIN_MS = 1_000;

/** Generation as a job: started (or joined), waited for within the request's time, polled. */
function registerGenerations(svc: Pick<Service, "handle">, deps: TaxDeps, runner: JobRunner): void {
  svc.handle("generateTaxDocuments", async (req, ctx) => {
    const body = parseOrThrow(schemas.GenerateTaxDocumentsBody, req.body);
    const tenant = tenantOf(ctx.auth);
    const { generation } = await startGeneration(deps, tenant, body.tax_year);
    // Answered before the caller's deadline, finished or not: a large year is a job to poll, never a 504.
    await runner.runUntilDone(generation.id, Math.min(runner.waitMs, ctx.deadline - Date.now() - ANSWER_MARGIN_MS));
    const now = await getGeneration(deps, tenant, generation.id);
    return { status: now.status === "succeeded" ? 200 : 202, body: { generation: presentGeneration(now) } };
  });
  svc.handle("getTaxGeneration", async (req, ctx) => {
    const id = prefixedId("taxgen").safeParse(req.params["generation_id"]);
    if (!id.success) throw new DomainError("tax_generation_not_found", `Tax generation ${req.params["generation_id"] ?? ""} not found`);
    return { body: { generation: presentGeneration(await getGeneration(deps, tenantOf(ctx.auth), id.data)) } };
  });
}

/** `svc.tax.internal.taxProfileStatus`: payout eligibility's question, whether a W-9 is certified (never the TIN). */
function registerInternal(svc: Pick<Service, "handleInternal">, deps: TaxDeps): void {
  svc.handleInternal(
    schemas.TAX_PROFILE_STATUS_OPERATION,
    (payload) => parseOrThrow(schemas.TaxProfileStatusRequest, payload),
    async (req) => {
      const profile = await deps.profiles.get(tenantOf(req), req.participant_id);
      return { tax_profile: { certified: profile !== undefined, certified_at: profile?.certifiedAt.toISOString() ?? null } };
    },
  );
}

/** Exports beyond one answer: a job, polled, then its parts downloaded one by one (ADR 0022). */
function registerExports(svc: Pick<Service, "handle">, deps: TaxDeps, runner: JobRunner): void {
  const exportId = (params: Record<string, string>) => {
    const id = prefixedId("taxexp").safeParse(params["export_id"]);
    if (!id.success) throw new DomainError("tax_export_not_found", `Tax export ${params["export_id"] ?? ""} not found`);
    return id.data;
  };
  svc.handle("createTaxExport", async (req, ctx) => {
    const body = parseOrThrow(schemas.CreateTaxExportBody, req.body);
    const tenant = tenantOf(ctx.auth);
    const job = await startExport(deps, tenant, body.tax_year, body.format);
    await runner.runUntilDone(job.id, Math.min(runner.waitMs, ctx.deadline - Date.now() - ANSWER_MARGIN_MS));
    const now = await getExport(deps, tenant, job.id);
    return { status: now.status === "succeeded" ? 200 : 202, body: { export: presentExport(now) } };
  });
  svc.handle("getTaxExport", async (req, ctx) => ({ body: { export: presentExport(await getExport(deps, tenantOf(ctx.auth), exportId(req.params))) } }));
  svc.handle("getTaxExportPart", async (req, ctx) => {
    const part = parseOrThrow(schemas.TaxExportPartParams, { part: req.params["part"] }, "path").part;
    const { job, text } = await exportPart(deps, tenantOf(ctx.auth), exportId(req.params), part);
    const ext = job.format === "fire" ? "txt" : job.format;
    const filename = `tax-${job.taxYear}-${job.format}.part${part}of${job.parts}.${ext}`;
    return { body: { file: { content_type: CONTENT_TYPES[job.format], filename, content: text } } };
  });
}

export function registerHandlers(
  svc: Pick<Service, "handle" | "handleInternal">,
  deps: TaxDeps,
  runners: { generations: JobRunner; exports: JobRunner },
): void {
  registerInternal(svc, deps);
  registerExports(svc, deps, runners.exports);
  const runner = runners.generations;
  svc.handle("putTaxProfile", async (req, ctx) => {
    const body = parseOrThrow(schemas.TaxProfileBody, req.body);
    const { profile, created } = await putProfile(deps, tenantOf(ctx.auth), param(req.params, "participant_id"), body, ctx.auth.key_id);
    return { status: created ? 201 : 200, body: { tax_profile: presentProfile(profile), created } };
  });
  svc.handle("getTaxProfile", async (req, ctx) => ({
    body: { tax_profile: presentProfile(await getProfile(deps, tenantOf(ctx.auth), param(req.params, "participant_id"))) },
  }));
  svc.handle("getTaxCalculation", async (req, ctx) => {
    const q = parseOrThrow(schemas.TaxCalculationQuery, req.query, "query");
    const tenant = tenantOf(ctx.auth);
    const year = q.tax_year ?? deps.now(tenant).getUTCFullYear();
    return { body: { calculation: presentCalculation(await getCalculation(deps, tenant, param(req.params, "participant_id"), year)) } };
  });
  svc.handle("putTaxSettings", async (req, ctx) => ({
    body: { tax_settings: presentSettings(await putSettings(deps, tenantOf(ctx.auth), parseOrThrow(schemas.TaxSettingsBody, req.body))) },
  }));
  svc.handle("getTaxSettings", async (req, ctx) => {
    const q = parseOrThrow(schemas.TaxYearQuery, req.query, "query");
    return { body: { tax_settings: presentSettings(await settingsOf(deps, tenantOf(ctx.auth), q.tax_year)) } };
  });
  registerGenerations(svc, deps, runner);
  svc.handle("listTaxDocuments", async (req, ctx) => {
    const q = parseOrThrow(schemas.ListTaxDocumentsQuery, req.query, "query");
    const { documents, total } = await listDocuments(deps, tenantOf(ctx.auth), q);
    return { body: { tax_documents: documents.map(presentDocument), total, limit: q.limit ?? 25, offset: q.offset ?? 0 } };
  });
  svc.handle("getTaxDocument", async (req, ctx) => {
    const q = parseOrThrow(schemas.GetTaxDocumentQuery, req.query, "query");
    const tenant = tenantOf(ctx.auth);
    const doc = await getDocument(deps, tenant, documentId(req.params));
    const sources = q.include === "sources" ? { sources: await documentSources(deps, tenant, doc) } : {};
    return { body: { tax_document: { ...presentDocument(doc), ...sources } } };
  });
  svc.handle("getTaxDocumentPdf", async (req, ctx) => {
    const { pdf, filename } = await recipientCopyPdf(deps, tenantOf(ctx.auth), documentId(req.params));
    return { body: { file: { content_type: "application/pdf", filename, content: pdf.toString("base64"), encoding: "base64" } } };
  });
  svc.handle("markTaxDocumentFiled", async (req, ctx) => ({
    body: { tax_document: presentDocument(await markFiled(deps, tenantOf(ctx.auth), documentId(req.params))) },
  }));
  svc.handle("correctTaxDocument", async (req, ctx) => {
    const body = parseOrThrow(schemas.CorrectTaxDocumentBody, req.body);
    const { original, corrected } = await correctDocument(deps, tenantOf(ctx.auth), documentId(req.params), body.reason);
    return { status: 201, body: { tax_document: presentDocument(corrected), original_document: presentDocument(original) } };
  });
  svc.handle("exportTaxDocuments", async (req, ctx) => {
    const q = parseOrThrow(schemas.ExportTaxDocumentsQuery, req.query, "query");
    const content = await exportToText(deps, tenantOf(ctx.auth), q.tax_year, q.format);
    // JSON is answered as every JSON answer is, in the envelope; CSV and FIRE as files.
    if (q.format === "json") return { body: JSON.parse(content) as Record<string, unknown> };
    const ext = q.format === "fire" ? "txt" : q.format;
    return { body: { file: { content_type: CONTENT_TYPES[q.format], filename: `tax-${q.tax_year}-${q.format}.${ext}`, content } } };
  });
  svc.handle("getTaxSummary", async (req, ctx) => {
    const year = parseOrThrow(schemas.TaxYearQuery, { tax_year: req.params["tax_year"] }, "path");
    return { body: { summary: await yearSummary(deps, tenantOf(ctx.auth), year.tax_year) } };
  });
}
