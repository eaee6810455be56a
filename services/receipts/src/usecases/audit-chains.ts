/**
 * The full audit of every chain: each link from the first, whatever the checkpoints say (a checkpoint spares a
 * verification the links before it; this catches a change made to them afterwards by someone able to lift the
 * append-only guard). Its findings are stored per chain and fail every verification of that chain until an
 * audit finds it whole again; the problems are logged (sequence numbers and hashes only).
 */
import type { Logger } from "pino";
import { listChains, recordAudit } from "../store/checkpoints.ts";
import type { ReceiptsDeps } from "./deps.ts";
import { walkChain } from "./walk-chain.ts";

export interface AuditReport {
  chains: number;
  broken: Array<{ org_id: string; livemode: boolean; problems: string[] }>;
}

/** Audits every chain once (until `stopping` says the service is shutting down). */
export async function auditChains(
  deps: Pick<ReceiptsDeps, "sql" | "keyring" | "checkpointEvery">,
  log: Logger,
  stopping: () => boolean = () => false,
): Promise<AuditReport> {
  const report: AuditReport = { chains: 0, broken: [] };
  for (const scope of await listChains(deps.sql)) {
    if (stopping()) break;
    const { problems, through } = await walkChain(deps, scope, { full: true });
    await recordAudit(deps.sql, scope, { audited_at: new Date(), through_sequence: through, problems });
    report.chains++;
    if (problems.length === 0) continue;
    report.broken.push({ org_id: scope.orgId, livemode: scope.livemode, problems });
    log.error({ org_id: scope.orgId, livemode: scope.livemode, problems: problems.slice(0, 20) }, "a receipt proof chain is broken");
  }
  return report;
}
