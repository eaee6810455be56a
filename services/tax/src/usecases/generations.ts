/**
 * A year's generation as a durable job. `startGeneration` records it (or finds the one running for the year) and
 * the service's runner takes it up at once (service.ts); the API answers 200 with the finished job when it ends
 * within the request's wait, else 202 with the job to poll (`GET /v1/tax/generations/{id}`). A runner holds a job by
 * a lease renewed with every page, and every page's documents commit with the job's cursor: a runner that stops
 * (a crash, a deploy) leaves the job where its last page ended, and the next pass on any replica takes it up from
 * there once the lease has run out.
 */
import { DomainError, type Tenant } from "@treasury/contracts";
import type { Generation } from "../domain/generations.ts";
import { generateDocuments } from "./generate.ts";
import type { TaxDeps } from "./ports.ts";
import { checkYearBegun } from "./years.ts";

export type GenerationDeps = Pick<TaxDeps, "generations" | "now" | "newGenerationId">;

/** Errors: invalid_tax_year (checked before anything is recorded). */
export async function startGeneration(deps: GenerationDeps, tenant: Tenant, taxYear: number): Promise<{ generation: Generation; started: boolean }> {
  checkYearBegun(deps, tenant, taxYear);
  return deps.generations.start(tenant, taxYear, deps.newGenerationId());
}

/** Errors: tax_generation_not_found. */
export async function getGeneration(deps: Pick<TaxDeps, "generations">, tenant: Tenant, id: string): Promise<Generation> {
  const g = await deps.generations.get(tenant, id);
  if (g === undefined)
    throw new DomainError("tax_generation_not_found", `Tax generation ${id} not found`, { hint: "POST /v1/tax/documents/generate answers its id" });
  return g;
}

/**
 * One pass of the runner: every job nobody holds, one after another, each to its end (or until the service stops).
 * A job whose run fails is let go with the error noted, and taken up again by a pass a lease later. `onFinished` hears of
 * each job run to its end (the API's wait). Answers the ids of the jobs it finished.
 */
export async function runPending(deps: TaxDeps, signal: AbortSignal, onFinished: (id: string) => void): Promise<string[]> {
  const finished: string[] = [];
  while (!signal.aborted) {
    const job = await deps.generations.claim(deps.generationLeaseMs);
    if (job === undefined) break;
    try {
      await generateDocuments(deps, job.tenant, job.taxYear, { generationId: job.id, after: job.after, signal });
      finished.push(job.id);
      onFinished(job.id);
    } catch (e) {
      if (signal.aborted) break;
      await deps.generations.release(job.id, e instanceof Error ? `${e.name}: ${e.message}` : String(e), deps.generationLeaseMs);
    }
  }
  return finished;
}
