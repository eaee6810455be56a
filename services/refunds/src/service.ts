/**
 * The refunds service: refunds of recorded sales and buyer refund requests (approve / reject / cancel), with a
 * reconciler for refunds stuck between intent and settle. It moves money only through `svc.ledger.post`, whose
 * refund request does the arithmetic (docs/architecture.md, "Money across services").
 */
import { createService, type Reconciler, type Service, type ServiceConfig, type ServiceDeps } from "@treasury/service-kit";
import { natsLedger } from "./adapters/ledger.ts";
import { natsPayments } from "./adapters/payments.ts";
import { RefundsEnv } from "./config.ts";
import { registerHandlers, registerInternal } from "./handlers/index.ts";
import { coalescedWrites, type RefundsDeps } from "./usecases/deps.ts";
import { refundsReconciler } from "./usecases/reconcile.ts";

export type RefundsService = Service<ServiceConfig<typeof RefundsEnv>> & { reconciler: Reconciler; deps: RefundsDeps };

export interface RefundsBuildDeps extends ServiceDeps {
  /** Runs after a refund intent is recorded, before the ledger post (crash tests stop the process there). */
  afterIntent?: () => Promise<void>;
  /** Runs between a refund's ledger post and its settle step (crash tests stop the process there). */
  afterLedgerPost?: () => Promise<void>;
}

export async function buildRefunds(env: Record<string, string | undefined>, deps: RefundsBuildDeps = {}): Promise<RefundsService> {
  const svc = await createService({ name: "refunds", env, extraEnv: RefundsEnv, deps });
  const cfg = svc.config;
  const useCaseDeps: RefundsDeps = {
    sql: svc.sql,
    writes: coalescedWrites(svc.sql),
    ledger: natsLedger(svc.nc, svc.prefix, cfg.REFUNDS_LEDGER_TIMEOUT_MS),
    payments: natsPayments(svc.nc, svc.prefix, cfg.REFUNDS_PAYMENTS_TIMEOUT_MS),
    log: svc.log,
    now: () => new Date(),
    afterIntent: deps.afterIntent ?? (async () => {}),
    afterLedgerPost: deps.afterLedgerPost ?? (async () => {}),
  };
  registerHandlers(svc, useCaseDeps);
  registerInternal(svc, useCaseDeps);
  const reconciler = refundsReconciler(
    useCaseDeps,
    { intervalMs: cfg.REFUNDS_RECONCILE_INTERVAL_MS, graceMs: cfg.REFUNDS_RECONCILE_GRACE_MS, batchMax: cfg.REFUNDS_RECONCILE_BATCH_MAX },
    svc.log,
  );
  const start = svc.start.bind(svc);
  const withReconciler = Object.assign(svc, {
    reconciler,
    deps: useCaseDeps,
    start: async () => {
      const res = await start();
      reconciler.start();
      return res;
    },
  });
  svc.onShutdown(() => reconciler.stop());
  return withReconciler;
}
