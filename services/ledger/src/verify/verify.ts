/**
 * `npm run -s admin -- ledger verify [--org ID]`: the ledger's invariants checked against the stored rows.
 * Read-only; every table is named with its schema, so it runs as the ledger's role or as a superuser.
 */
import type { Q } from "../store/db.ts";
import { checkInvariants, type InvariantReport } from "./invariants.ts";

export type { InvariantReport, InvariantViolationRow } from "./invariants.ts";

export async function verifyLedger(sql: Q, opts: { orgId?: string } = {}): Promise<InvariantReport> {
  return checkInvariants(sql, opts.orgId === undefined ? {} : { orgId: opts.orgId });
}
