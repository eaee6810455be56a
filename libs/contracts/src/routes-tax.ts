/**
 * The tax service's operations (wire-decisions §10), in a block of their own: documents, calculations, settings and
 * exports need the `accounting` scope, reads included (they carry every payee's figures); the W-9 profile needs
 * `creators`. The route table (routes.ts) lists them with the rest.
 */
import * as S from "./schemas.ts";
import type { RouteDef } from "./route-def.ts";

type R = Omit<RouteDef, "method" | "path" | "service" | "rateClass"> & Partial<Pick<RouteDef, "rateClass">>;
const route = (method: RouteDef["method"], path: string, r: R): RouteDef => ({
  method,
  path,
  service: "tax",
  rateClass: method === "GET" ? "read" : "write",
  ...r,
});

export const TAX_ROUTES: readonly RouteDef[] = [
  route("PUT", "/v1/participants/:participant_id/tax-profile", {
    operation: "putTaxProfile",
    scope: "creators",
    summary: "Set the participant's W-9 tax profile (the full TIN is sealed at rest; only its last four are shown)",
    body: S.TaxProfileBody,
    creates: true,
  }),
  route("GET", "/v1/participants/:participant_id/tax-profile", { operation: "getTaxProfile", scope: "creators", summary: "The participant's tax profile" }),
  route("GET", "/v1/tax/calculations/:participant_id", {
    operation: "getTaxCalculation",
    scope: "accounting",
    summary: "A participant's figures for a tax year, from the ledger as of the year's end, and the form that applies",
    query: S.TaxCalculationQuery,
  }),
  route("PUT", "/v1/tax/settings", {
    operation: "putTaxSettings",
    scope: "accounting",
    summary: "The form and thresholds of a tax year for this org and environment",
    body: S.TaxSettingsBody,
  }),
  route("GET", "/v1/tax/settings", { operation: "getTaxSettings", scope: "accounting", summary: "The tax settings of a year", query: S.TaxYearQuery }),
  route("POST", "/v1/tax/documents/generate", {
    operation: "generateTaxDocuments",
    scope: "accounting",
    summary:
      "Make or update the year's draft documents, one per participant over the threshold (idempotent): 200 with the finished generation, or 202 with the running one to poll",
    body: S.GenerateTaxDocumentsBody,
  }),
  route("GET", "/v1/tax/generations/:generation_id", {
    operation: "getTaxGeneration",
    scope: "accounting",
    summary: "A generation of a year's documents: running or succeeded, with what it has written so far",
  }),
  route("GET", "/v1/tax/documents/export", {
    operation: "exportTaxDocuments",
    scope: "accounting",
    summary: "The year's documents as CSV, JSON or the IRS FIRE fixed-width file (Publication 1220)",
    query: S.ExportTaxDocumentsQuery,
    fileResponse: true,
  }),
  route("POST", "/v1/tax/exports", {
    operation: "createTaxExport",
    scope: "accounting",
    summary: "Export a year of any size as a job cut into parts: 200 when written within the wait, else 202 to poll",
    body: S.CreateTaxExportBody,
  }),
  route("GET", "/v1/tax/exports/:export_id", {
    operation: "getTaxExport",
    scope: "accounting",
    summary: "An export job: running or succeeded, with its parts",
  }),
  route("GET", "/v1/tax/exports/:export_id/parts/:part", {
    operation: "getTaxExportPart",
    scope: "accounting",
    summary: "One part of a finished export (1…parts); the parts joined in order are the file",
    fileResponse: true,
  }),
  route("GET", "/v1/tax/documents", { operation: "listTaxDocuments", scope: "accounting", summary: "List tax documents", query: S.ListTaxDocumentsQuery }),
  route("GET", "/v1/tax/documents/:document_id", {
    operation: "getTaxDocument",
    scope: "accounting",
    summary: "A tax document; `include=sources` lists the ledger transactions behind its figures",
    query: S.GetTaxDocumentQuery,
  }),
  route("GET", "/v1/tax/documents/:document_id/pdf", {
    operation: "getTaxDocumentPdf",
    scope: "accounting",
    summary: "The recipient copy as PDF",
    fileResponse: true,
  }),
  route("POST", "/v1/tax/documents/:document_id/mark-filed", {
    operation: "markTaxDocumentFiled",
    scope: "accounting",
    summary: "Mark a draft document filed",
  }),
  route("POST", "/v1/tax/documents/:document_id/correct", {
    operation: "correctTaxDocument",
    scope: "accounting",
    summary: "Correct a filed document from the ledger's figures: a new document linked to the original",
    body: S.CorrectTaxDocumentBody,
    creates: true,
  }),
  route("GET", "/v1/tax/summaries/:tax_year", {
    operation: "getTaxSummary",
    scope: "accounting",
    summary: "The year's documents counted and summed by form and status",
  }),
];
