/**
 * The full audit of every chain: each link from the first, whatever the checkpoints say (a checkpoint spares a
 * verification the links before it; this catches a change made to them afterwards by someone able to lift the
 * append-only guard). Its findings are stored per chain and fail every verification of that chain until an
 * audit finds it whole again; the problems are logged (sequence numbers and hashes only).
 */
import type { Logger } from "pino";
import { findAudit, listChains, recordAudit } from "../store/checkpoints.ts";
import type { ReceiptsDeps } from "./deps.ts";
import { walkChain } from "./walk-chain.ts";

export interface AuditReport {
  chains: number;
  broken: Array<{ org_id: string; livemode: boolean; problems: string[] }>;
}

/**
 * Audits every chain once (until `stopping` says the service is shutting down), but for chains audited less than
 * `skipAuditedWithinMs` ago: the replicas of the service each run the audit, and a chain one of them has just
 * walked is not walked again by the others.
 */
export async function auditChains(
  deps: Pick<ReceiptsDeps, "sql" | "keyring" | "checkpointEvery">,
  log: Logger,
  opts: { skipAuditedWithinMs?: number; stopping?: () => boolean } = {},
): Promise<AuditReport> {
  const report: AuditReport = { chains: 0, broken: [] };
  for (const scope of await listChains(deps.sql)) {
    if (opts.stopping?.() === true) break;
    const last = opts.skipAuditedWithinMs === undefined ? undefined : await findAudit(deps.sql, scope);
    if (last !== undefined && Date.now() - last.audited_at.getTime() < (opts.skipAuditedWithinMs ?? 0)) continue;
    const { problems, through } = await walkChain(deps, scope, { full: true });
    await recordAudit(deps.sql, scope, { audited_at: new Date(), through_sequence: through, problems });
    report.chains++;
    if (problems.length === 0) continue;
    report.broken.push({ org_id: scope.orgId, livemode: scope.livemode, problems });
    log.error({ org_id: scope.orgId, livemode: scope.livemode, problems: problems.slice(0, 20) }, "a receipt proof chain is broken");
  }
  return report;
}
