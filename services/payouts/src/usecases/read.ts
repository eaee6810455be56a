/**
 * Reading payouts: one by id, and the list (newest first). A refused request moved nothing and is not shown.
 *
 * Errors: payout_not_found, invalid_limit (paging).
 */
import { DomainError, type schemas, type Tenant } from "@treasury/contracts";
import type { z } from "zod";
import type { PayoutsDeps } from "./deps.ts";
import { presentPayout } from "./present.ts";

export const LIST_LIMIT_DEFAULT = 25;
const PAYOUT_ID_RE = /^po_[A-Za-z0-9]{1,64}$/;

export async function getPayout(deps: PayoutsDeps, tenant: Tenant, id: string): Promise<Record<string, unknown>> {
  const row = PAYOUT_ID_RE.test(id) ? await deps.payouts.findPayout(tenant, id) : undefined;
  if (row === undefined || row.status === "refused")
    throw new DomainError("payout_not_found", `Payout ${id} not found`, { hint: "GET /v1/payouts lists payouts" });
  return { payout: presentPayout(row) };
}

export async function listPayouts(deps: PayoutsDeps, tenant: Tenant, query: z.output<typeof schemas.ListPayoutsQuery>): Promise<Record<string, unknown>> {
  const limit = query.limit ?? LIST_LIMIT_DEFAULT;
  const offset = query.offset ?? 0;
  const { rows, total } = await deps.payouts.list(tenant, { participantId: query.participant_id, status: query.status, limit, offset });
  return { payouts: rows.map((r) => presentPayout(r)), total, limit, offset };
}
