/**
 * The payments service: checkout sessions (hosted + direct + wallet-funded), splits, sandbox completion and
 * failure, the reconciler, hosted checkout and wallet pages, wallet sessions, shared-wallet spend and its
 * reversal, and live card money through the processor (its signed webhooks and their worker, live completion,
 * live wallet funding, card refunds, disputes). It moves money only through `svc.ledger.post`.
 */
import { Counter, createService, Histogram, PeriodicTask, type Reconciler, type Service, type ServiceConfig, type ServiceDeps } from "@treasury/service-kit";
import { natsLedger } from "./adapters/ledger.ts";
import { isLiveProcessorKey, soledgicProvider, stripeProvider } from "./adapters/providers.ts";
import { natsRefunds } from "./adapters/refunds.ts";
import { stripeClient, type ProcessorClient } from "./adapters/stripe.ts";
import { PaymentsEnv } from "./config.ts";
import { registerHandlers } from "./handlers/index.ts";
import { registerInternalReads } from "./handlers/internal-reads.ts";
import type { PaymentsDeps } from "./usecases/deps.ts";
import { ProcessorWorker } from "./usecases/processor-worker.ts";
import { pruneProcessorEvents } from "./usecases/prune-processor-events.ts";
import { checkProcessorSessions } from "./usecases/check-processor-sessions.ts";
import { paymentsReconciler } from "./usecases/reconcile.ts";

export type PaymentsService = Service<ServiceConfig<typeof PaymentsEnv>> & { reconciler: Reconciler; processorWorker: ProcessorWorker; deps: PaymentsDeps };

export interface PaymentsBuildDeps extends ServiceDeps {
  /** Runs between a completion's ledger post and its settle step (crash tests stop the process there). */
  afterLedgerPost?: () => Promise<void>;
  /** Runs after a processor event was recorded and answered, before the worker acts on it (crash tests stop there). */
  beforeProcessorWork?: () => Promise<void>;
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
  const stepChildren = {
    intent: steps.labels({ step: "intent" }),
    ledger_post: steps.labels({ step: "ledger_post" }),
    settle: steps.labels({ step: "settle" }),
  };
  // A processor report dropped for not matching its session: a test-mode payment aimed at a live session, or a
  // report of another session; any of them in production is a misconfigured key or endpoint, or someone trying.
  const droppedReports = new Counter({
    name: "processor_events_dropped_total",
    help: "Processor reports of a session (events, or sessions read back) dropped because they do not match the stored session, by reason",
    labelNames: ["reason"] as const,
    registers: [svc.metrics],
  });
  const processor: ProcessorClient | undefined =
    cfg.STRIPE_SECRET_KEY === undefined
      ? undefined
      : stripeClient({
          secretKey: cfg.STRIPE_SECRET_KEY,
          apiBase: cfg.STRIPE_API_BASE,
          timeoutMs: cfg.STRIPE_TIMEOUT_MS,
          maxNetworkRetries: cfg.STRIPE_MAX_NETWORK_RETRIES,
        });
  // The worker needs the use-case deps and the deps wake the worker: the reference is filled in right below.
  const workerRef: { current?: ProcessorWorker } = {};
  const useCaseDeps: PaymentsDeps = {
    sql: svc.sql,
    ledger: natsLedger(svc.nc, svc.prefix, cfg.PAYMENTS_LEDGER_TIMEOUT_MS),
    refunds: natsRefunds(svc.nc, svc.prefix, cfg.PAYMENTS_LEDGER_TIMEOUT_MS),
    processor,
    providers: {
      soledgic: soledgicProvider,
      stripe: stripeProvider(processor, { liveAccount: cfg.STRIPE_SECRET_KEY !== undefined && isLiveProcessorKey(cfg.STRIPE_SECRET_KEY) }),
    },
    log: svc.log,
    now: () => new Date(),
    processorCheckAfterMs: cfg.PAYMENTS_PROCESSOR_CHECK_AFTER_MS,
    afterLedgerPost: deps.afterLedgerPost ?? (async () => {}),
    beforeProcessorWork: deps.beforeProcessorWork ?? (async () => {}),
    wakeProcessorWorker: () => workerRef.current?.wake(),
    observeStep: (step, seconds) => stepChildren[step].observe(seconds),
    processorEventDropped: (reason) => droppedReports.labels({ reason }).inc(),
  };
  const worker = new ProcessorWorker(
    useCaseDeps,
    { pollMs: cfg.PAYMENTS_PROCESSOR_POLL_MS, leaseMs: cfg.PAYMENTS_PROCESSOR_LEASE_MS, batchMax: cfg.PAYMENTS_PROCESSOR_BATCH_MAX },
    svc.log,
  );
  workerRef.current = worker;
  registerHandlers(svc, useCaseDeps, { secret: cfg.STRIPE_WEBHOOK_SECRET, toleranceSec: cfg.STRIPE_WEBHOOK_TOLERANCE_S });
  registerInternalReads(svc, useCaseDeps);
  const reconciler = paymentsReconciler(
    useCaseDeps,
    { intervalMs: cfg.PAYMENTS_RECONCILE_INTERVAL_MS, graceMs: cfg.PAYMENTS_RECONCILE_GRACE_MS, batchMax: cfg.PAYMENTS_RECONCILE_BATCH_MAX },
    svc.log,
  );
  const processorCheckCount = new Counter({
    name: "processor_session_checks_total",
    help: "Processor sessions no event had settled, asked about at the processor, by what was found (paid: a payment whose webhook never came)",
    labelNames: ["found"] as const,
    registers: [svc.metrics],
  });
  // Its own loop: its calls to the processor never hold up the reconciler's passes over money in flight.
  const processorChecks = new PeriodicTask({
    name: "processor session checks",
    intervalMs: cfg.PAYMENTS_RECONCILE_INTERVAL_MS,
    log: svc.log,
    run: async () => {
      const found = await checkProcessorSessions(useCaseDeps, cfg.PAYMENTS_RECONCILE_BATCH_MAX);
      for (const [f, n] of Object.entries(found)) if (n > 0) processorCheckCount.labels({ found: f }).inc(n);
    },
  });
  const pruner = new PeriodicTask({
    name: "processor-event pruner",
    intervalMs: cfg.PAYMENTS_PROCESSOR_PRUNE_INTERVAL_MS,
    log: svc.log,
    run: async () => {
      const deleted = await pruneProcessorEvents(useCaseDeps, cfg.PAYMENTS_PROCESSOR_EVENT_RETENTION_DAYS);
      if (deleted > 0) svc.log.info({ deleted }, "finished processor events past their retention deleted");
    },
  });
  const start = svc.start.bind(svc);
  const withReconciler = Object.assign(svc, {
    reconciler,
    processorWorker: worker,
    deps: useCaseDeps,
    start: async () => {
      const res = await start();
      reconciler.start();
      processorChecks.start();
      worker.start();
      pruner.start();
      return res;
    },
  });
  svc.onShutdown(() => reconciler.stop());
  svc.onShutdown(() => processorChecks.stop());
  svc.onShutdown(() => worker.stop());
  svc.onShutdown(() => pruner.stop());
  return withReconciler;
}
