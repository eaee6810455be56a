/**
 * A year's generation as a job (usecases/generations.ts): where it stands, what it has written so far. Counts are
 * the sums over the pages committed; `after` is the last participant of the last page committed.
 */
import type { Tenant } from "@treasury/contracts";

export type GenerationStatus = "running" | "succeeded";

export interface Generation {
  id: string;
  tenant: Tenant;
  taxYear: number;
  status: GenerationStatus;
  after: string | null;
  participantsRead: number;
  created: number;
  updated: number;
  unchanged: number;
  filed: number;
  removed: number;
  lastError: string | null;
  createdAt: Date;
  updatedAt: Date;
  finishedAt: Date | null;
}

export function presentGeneration(g: Generation) {
  return {
    id: g.id,
    object: "tax_generation",
    tax_year: g.taxYear,
    status: g.status,
    participants_read: g.participantsRead,
    created: g.created,
    updated: g.updated,
    unchanged: g.unchanged,
    filed: g.filed,
    removed: g.removed,
    last_error: g.lastError,
    created_at: g.createdAt.toISOString(),
    updated_at: g.updatedAt.toISOString(),
    finished_at: g.finishedAt?.toISOString() ?? null,
  };
}
