/**
 * GET /v1/refunds/{id} and GET /v1/refunds (newest first, optionally of one sale).
 * Errors: refund_not_found, invalid_limit (by the query schema).
 */
import { DomainError, type Tenant } from "@treasury/contracts";
import type { RefundRow } from "../domain/records.ts";
import { PAGE_LIMIT_DEFAULT, type RefundsDeps } from "./deps.ts";

const REFUND_ID_RE = /^re_[a-z0-9]{1,64}$/;

export async function getRefund(deps: RefundsDeps, tenant: Tenant, id: string): Promise<RefundRow> {
  const row = REFUND_ID_RE.test(id) ? await deps.store.findRefund(tenant, id) : undefined;
  if (row === undefined) throw new DomainError("refund_not_found", `Refund ${id} not found`, { hint: "GET /v1/refunds lists refunds, newest first" });
  return row;
}

export interface RefundList {
  refunds: RefundRow[];
  total: number;
  limit: number;
  offset: number;
}

export async function listRefundsOf(
  deps: RefundsDeps,
  tenant: Tenant,
  query: { sale_reference?: string | undefined; limit?: number | undefined; offset?: number | undefined },
): Promise<RefundList> {
  const limit = query.limit ?? PAGE_LIMIT_DEFAULT;
  const offset = query.offset ?? 0;
  const { rows, total } = await deps.store.listRefunds(tenant, { saleReference: query.sale_reference, limit, offset });
  return { refunds: rows, total, limit, offset };
}
