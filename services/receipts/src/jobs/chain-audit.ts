/**
 * The full audit of the receipt chains (usecases/audit-chains.ts) as the service runs it: every
 * RECEIPTS_CHAIN_AUDIT_INTERVAL_MS, on every replica. Not a leader job: the audit only reads proofs and
 * upserts one finding per chain, so two replicas auditing the same chain at once store the same finding; the
 * replicas share the work instead (a chain another replica audited within half an interval is skipped); and
 * every replica must refresh its own `receipt_chains_broken` after its passes, since the alert in
 * k8s/monitoring takes the largest value any replica reports. Its findings reach /metrics:
 * `receipt_chains_broken` counts the chains whose stored audit found problems, the same on every replica, read
 * at start and after each pass. A pass in progress at shutdown ends after the chain it is walking.
 */
import { Gauge, type Job, type Service } from "@treasury/service-kit";
import { auditChains, type AuditReport } from "../usecases/audit-chains.ts";
import type { ReceiptsDeps } from "../usecases/ports.ts";

type AuditDeps = Pick<ReceiptsDeps, "proofs" | "chains" | "keyring" | "checkpointEvery" | "now">;

export function registerChainAudit(svc: Pick<Service, "every" | "onStart" | "metrics" | "log">, deps: AuditDeps, intervalMs: number): Job<AuditReport> {
  const broken = new Gauge({
    name: "receipt_chains_broken",
    help: "Receipt proof chains whose last full audit found problems (stored, so every replica reports the same)",
    registers: [svc.metrics],
  });
  const lastPass = new Gauge({
    name: "receipt_chain_audit_last_pass_timestamp_seconds",
    help: "When this replica last completed a pass of the full chain audit (0: not yet)",
    registers: [svc.metrics],
  });
  const refresh = async (): Promise<void> => broken.set(await deps.chains.countBroken());
  svc.onStart(refresh);
  return svc.every({
    name: "receipt chain audit",
    intervalMs,
    run: async (_leader, signal) => {
      const report = await auditChains(deps, svc.log, { skipAuditedWithinMs: intervalMs / 2, signal });
      lastPass.set(Date.now() / 1000);
      await refresh();
      return report;
    },
  });
}
