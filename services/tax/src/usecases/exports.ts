/**
 * A year's export larger than one API answer, as a durable job (ADR 0022): the file is streamed as the direct
 * export streams it (`exportDocuments`, flat memory) and cut into parts of at most `exportBytesMax` bytes, each
 * sealed with the TIN key ring (a FIRE file carries full TINs) and committed with the job's size and lease. The
 * client downloads parts 1…`parts` once the job has succeeded and joins them in order. A runner that stops leaves
 * the job to be taken up by the next pass, which starts the file over (a file is one reading of the documents).
 */
import { DomainError, type schemas, type Tenant } from "@treasury/contracts";
import { cutAt, type TaxExport } from "../domain/exports.ts";
import { exportDocuments } from "./export.ts";
import type { TaxDeps } from "./ports.ts";
import { checkYearBegun } from "./years.ts";

const partAad = (exportId: string, part: number) => `tax.export_parts|${exportId}|${part}`;

function sealerOf(deps: Pick<TaxDeps, "sealer">) {
  if (deps.sealer === undefined)
    throw new DomainError("service_unavailable", "Export files are sealed at rest with the TINs' encryption keys, which are not configured");
  return deps.sealer;
}

/** Errors: invalid_tax_year, service_unavailable (no key ring): both before anything is recorded. */
export async function startExport(deps: TaxDeps, tenant: Tenant, taxYear: number, format: schemas.ExportFormat): Promise<TaxExport> {
  checkYearBegun(deps, tenant, taxYear);
  sealerOf(deps);
  return deps.exports.start(tenant, taxYear, format, deps.newExportId());
}

/** Errors: tax_export_not_found. */
export async function getExport(deps: Pick<TaxDeps, "exports">, tenant: Tenant, id: string): Promise<TaxExport> {
  const e = await deps.exports.get(tenant, id);
  if (e === undefined) throw new DomainError("tax_export_not_found", `Tax export ${id} not found`, { hint: "POST /v1/tax/exports answers its id" });
  return e;
}

/** Errors: tax_export_not_found, tax_export_not_ready (still running: poll it), tax_export_part_not_found. */
export async function exportPart(
  deps: Pick<TaxDeps, "exports" | "sealer">,
  tenant: Tenant,
  id: string,
  part: number,
): Promise<{ job: TaxExport; text: string }> {
  const job = await getExport(deps, tenant, id);
  if (job.status !== "succeeded")
    throw new DomainError("tax_export_not_ready", `Tax export ${id} is still being written`, { hint: `GET /v1/tax/exports/${id}` });
  const sealed = part >= 1 && part <= job.parts ? await deps.exports.part(tenant, id, part) : undefined;
  if (sealed === undefined) throw new DomainError("tax_export_part_not_found", `Tax export ${id} has parts 1 to ${job.parts}`);
  return { job, text: sealerOf(deps).open(sealed, partAad(id, part)) };
}

/** Writes one claimed job's file as parts, to its end. */
async function writeParts(deps: TaxDeps, job: TaxExport, signal: AbortSignal): Promise<void> {
  const sealer = sealerOf(deps);
  let part = 0;
  let pending = "";
  const flush = async (text: string) => {
    part += 1;
    await deps.exports.addPart(job.id, part, sealer.seal(text, partAad(job.id, part)), Buffer.byteLength(text), deps.generationLeaseMs);
  };
  for await (const chunk of exportDocuments(deps, job.tenant, job.taxYear, job.format)) {
    signal.throwIfAborted();
    pending += chunk;
    while (Buffer.byteLength(pending) > deps.exportBytesMax) {
      const [head, rest] = cutAt(pending, deps.exportBytesMax);
      await flush(head);
      pending = rest;
    }
  }
  if (pending.length > 0 || part === 0) await flush(pending);
  await deps.exports.finish(job.id);
}

/** One pass of the export runner: every export nobody holds, each to its end. Answers the ids it finished. */
export async function runPendingExports(deps: TaxDeps, signal: AbortSignal, onFinished: (id: string) => void): Promise<string[]> {
  const finished: string[] = [];
  while (!signal.aborted) {
    const job = await deps.exports.claim(deps.generationLeaseMs);
    if (job === undefined) break;
    try {
      await writeParts(deps, job, signal);
      finished.push(job.id);
      onFinished(job.id);
    } catch (e) {
      if (signal.aborted) break;
      await deps.exports.release(job.id, e instanceof Error ? `${e.name}: ${e.message}` : String(e), deps.generationLeaseMs);
    }
  }
  return finished;
}
