/**
 * `audit list` across services: every service's record of the operator actions it performed (its audit_log, and
 * the kyc service's own record of review decisions), asked of each and merged, newest first (ADR 0016).
 */
import { ADMIN_FANOUT_OPERATIONS, type AuditEntry, type AuditListRequest } from "@treasury/contracts";
import type { AdminClient, Unanswered } from "./client.ts";

/** Every service's rows, newest first, at most `limit` in all; and the services that did not answer. */
export async function listAudit(client: AdminClient, f: AuditListRequest): Promise<{ entries: AuditEntry[]; unanswered: Unanswered[] }> {
  const { answers, unanswered } = await client.fanOut<{ entries: AuditEntry[] }>(ADMIN_FANOUT_OPERATIONS.auditList, f);
  const time = (e: AuditEntry): number => new Date(e.at).getTime();
  const entries = answers
    .flatMap((a) => a.body.entries)
    .sort((a, b) => time(b) - time(a) || (a.source === b.source ? Number(b.id) - Number(a.id) : 0))
    .slice(0, f.limit);
  return { entries, unanswered };
}
