/**
 * `ledger verify [--org ID]` (admin/commands.ts): the ledger's invariants checked against the stored rows, in one
 * read-only snapshot, so every check sees the same moment of a ledger that keeps moving. Every table is named with
 * its schema, so it runs as the ledger's role or as a superuser.
 */
import type { Sql } from "../store/db.ts";
import { checkInvariants, type InvariantReport } from "./invariants.ts";

export type { InvariantReport, InvariantViolationRow } from "./invariants.ts";

/** `timeoutMs` bounds each statement: a check that would run past it fails instead of holding its snapshot. */
export async function verifyLedger(sql: Sql, opts: { orgId?: string; timeoutMs?: number } = {}): Promise<InvariantReport> {
  return sql.begin("read only isolation level repeatable read", async (tx) => {
    if (opts.timeoutMs !== undefined) await tx`select set_config('statement_timeout', ${String(opts.timeoutMs)}, true)`;
    return checkInvariants(tx, opts.orgId === undefined ? {} : { orgId: opts.orgId });
  });
}
