/**
 * The full audit of every chain: each link from the first, whatever the checkpoints say (a checkpoint spares a
 * verification the links before it; this catches a change made to them afterwards by someone able to lift the
 * append-only guard). Its findings are stored per chain and fail every verification of that chain until an
 * audit finds it whole again; the problems are logged (sequence numbers and hashes only).
 */
import type { Logger } from "pino";
import type { ReceiptsDeps } from "./ports.ts";
import { walkChain, type Walker } from "./walk-chain.ts";

export interface AuditReport {
  chains: number;
  broken: Array<{ org_id: string; livemode: boolean; problems: string[] }>;
}

/**
 * Audits every chain once, but for chains audited less than `skipAuditedWithinMs` ago: the replicas of the
 * service each run the audit, and a chain one of them has just walked is not walked again by the others.
 */
export async function auditChains(
  deps: Walker & Pick<ReceiptsDeps, "now">,
  log: Logger,
  opts: { skipAuditedWithinMs?: number; signal?: AbortSignal } = {},
): Promise<AuditReport> {
  const report: AuditReport = { chains: 0, broken: [] };
  for (const tenant of await deps.chains.listChains()) {
    // A shutdown ends the pass between two chains; the next pass (here or on another replica) goes on.
    if (opts.signal?.aborted === true) break;
    const last = opts.skipAuditedWithinMs === undefined ? undefined : await deps.chains.findAudit(tenant);
    if (last !== undefined && deps.now().getTime() - last.audited_at.getTime() < (opts.skipAuditedWithinMs ?? 0)) continue;
    const { problems, through } = await walkChain(deps, tenant, { full: true });
    await deps.chains.recordAudit(tenant, { audited_at: deps.now(), through_sequence: through, problems });
    report.chains++;
    if (problems.length === 0) continue;
    report.broken.push({ org_id: tenant.orgId, livemode: tenant.livemode, problems });
    log.error({ org_id: tenant.orgId, livemode: tenant.livemode, problems: problems.slice(0, 20) }, "a receipt proof chain is broken");
  }
  return report;
}
