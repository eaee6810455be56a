/**
 * The payments service: checkout sessions (hosted + direct + wallet-funded), splits, sandbox completion and
 * failure, the reconciler, hosted checkout and wallet pages, wallet sessions, shared-wallet spend and its
 * reversal. It moves money only through `svc.ledger.post`.
 */
import { createService, Histogram, type Service, type ServiceConfig, type ServiceDeps } from "@treasury/service-kit";
import { natsLedger } from "./adapters/ledger.ts";
import { soledgicProvider, stripeProvider } from "./adapters/providers.ts";
import { natsRefunds } from "./adapters/refunds.ts";
import { PaymentsEnv } from "./config.ts";
import { registerHandlers } from "./handlers/index.ts";
import { registerInternalReads } from "./handlers/internal-reads.ts";
import type { PaymentsDeps } from "./usecases/deps.ts";
import { Reconciler } from "./usecases/reconcile.ts";

export type PaymentsService = Service<ServiceConfig<typeof PaymentsEnv>> & { reconciler: Reconciler; deps: PaymentsDeps };

export interface PaymentsBuildDeps extends ServiceDeps {
  /** Runs between a completion's ledger post and its settle step (crash tests stop the process there). */
  afterLedgerPost?: () => Promise<void>;
}

export async function buildPayments(env: Record<string, string | undefined>, deps: PaymentsBuildDeps = {}): Promise<PaymentsService> {
  const svc = await createService({ name: "payments", env, extraEnv: PaymentsEnv, deps });
  const cfg = svc.config;
  // Where a completion's time goes (intent → ledger post → settle): the first place to look when checkouts slow down.
  const steps = new Histogram({
    name: "checkout_completion_step_seconds",
    help: "Time of each step of a checkout completion: recording the intent, the ledger post, settling",
    labelNames: ["step"] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [svc.metrics],
  });
  const stepChildren = { intent: steps.labels({ step: "intent" }), ledger_post: steps.labels({ step: "ledger_post" }), settle: steps.labels({ step: "settle" }) };
  const useCaseDeps: PaymentsDeps = {
    sql: svc.sql,
    ledger: natsLedger(svc.nc, svc.prefix, cfg.PAYMENTS_LEDGER_TIMEOUT_MS),
    refunds: natsRefunds(svc.nc, svc.prefix, cfg.PAYMENTS_LEDGER_TIMEOUT_MS),
    providers: { soledgic: soledgicProvider, stripe: stripeProvider({ secretKey: cfg.STRIPE_SECRET_KEY, apiBase: cfg.STRIPE_API_BASE }) },
    log: svc.log,
    now: () => new Date(),
    afterLedgerPost: deps.afterLedgerPost ?? (async () => {}),
    observeStep: (step, seconds) => stepChildren[step].observe(seconds),
  };
  registerHandlers(svc, useCaseDeps);
  registerInternalReads(svc);
  const reconciler = new Reconciler(
    useCaseDeps,
    { intervalMs: cfg.PAYMENTS_RECONCILE_INTERVAL_MS, graceMs: cfg.PAYMENTS_RECONCILE_GRACE_MS, batchMax: cfg.PAYMENTS_RECONCILE_BATCH_MAX },
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
