/**
 * GET /v1/refunds/{id} and GET /v1/refunds (newest first, optionally of one sale).
 * Errors: refund_not_found, invalid_limit (by the query schema).
 */
import { DomainError } from "@treasury/contracts";
import type { Scope } from "../store/db.ts";
import { findRefund, listRefunds } from "../store/refunds.ts";
import { PAGE_LIMIT_DEFAULT, type RefundsDeps } from "./deps.ts";
import { presentRefund } from "./present.ts";

const REFUND_ID_RE = /^re_[a-z0-9]{1,64}$/;

export async function getRefund(deps: RefundsDeps, scope: Scope, id: string): Promise<{ body: Record<string, unknown> }> {
  const row = REFUND_ID_RE.test(id) ? await findRefund(deps.sql, scope, id) : undefined;
  if (row === undefined) throw new DomainError("refund_not_found", `Refund ${id} not found`, { hint: "GET /v1/refunds lists refunds, newest first" });
  return { body: { refund: presentRefund(row) } };
}

export async function listRefundsOf(
  deps: RefundsDeps,
  scope: Scope,
  query: { sale_reference?: string | undefined; limit?: number | undefined; offset?: number | undefined },
): Promise<{ body: Record<string, unknown> }> {
  const limit = query.limit ?? PAGE_LIMIT_DEFAULT;
  const offset = query.offset ?? 0;
  const { rows, total } = await listRefunds(deps.sql, scope, { saleReference: query.sale_reference, limit, offset });
  return { body: { refunds: rows.map(presentRefund), total, count: rows.length, limit, offset } };
}
