/**
 * The payments service: checkout sessions (hosted + direct + wallet-funded), splits, sandbox completion and
 * failure, the reconciler, hosted checkout and wallet pages, wallet sessions, shared-wallet spend and its
 * reversal, and live card money through the processor (its signed webhooks and their worker, live completion,
 * live wallet funding, card refunds, disputes). It moves money only through `svc.ledger.post`.
 */
import { createService, riskGateFor, type Job, type RiskGate, type Service, type ServiceDeps } from "@treasury/service-kit";
import { pgFinder } from "./admin/find.ts";
import { natsLedger } from "./adapters/ledger.ts";
import { isLiveProcessorKey, soledgicProvider, stripeProvider } from "./adapters/providers.ts";
import { natsRefunds } from "./adapters/refunds.ts";
import { stripeClient } from "./adapters/stripe.ts";
import { PaymentsEnv, type PaymentsConfig } from "./config.ts";
import { registerHandlers } from "./handlers/index.ts";
import { registerInternalReads } from "./handlers/internal-reads.ts";
import { registerJobs } from "./jobs/index.ts";
import { paymentsMetrics, type PaymentsMetrics } from "./metrics.ts";
import { pgStores } from "./store/index.ts";
import type { PaymentsDeps } from "./usecases/deps.ts";
import type { ProcessorClient, Providers } from "./usecases/ports.ts";

export type PaymentsService = Service<PaymentsConfig> & { reconciler: Job<number>; processorWorker: Job<number>; deps: PaymentsDeps };

export interface PaymentsBuildDeps extends ServiceDeps {
  /** Risk checks before money moves; the kit's gate over NATS unless a test gives its own. */
  risk?: RiskGate;
  /** Runs between a completion's ledger post and its settle step (crash tests stop the process there). */
  afterLedgerPost?: () => Promise<void>;
  /** Runs after a processor event was recorded and answered, before the worker acts on it (crash tests stop there). */
  beforeProcessorWork?: () => Promise<void>;
}

/** The card processor's client, when the deployment has its key. */
function processorOf(cfg: PaymentsConfig): ProcessorClient | undefined {
  if (cfg.STRIPE_SECRET_KEY === undefined) return undefined;
  return stripeClient({
    secretKey: cfg.STRIPE_SECRET_KEY,
    apiBase: cfg.STRIPE_API_BASE,
    timeoutMs: cfg.STRIPE_TIMEOUT_MS,
    maxNetworkRetries: cfg.STRIPE_MAX_NETWORK_RETRIES,
  });
}

function providersOf(cfg: PaymentsConfig, processor: ProcessorClient | undefined): Providers {
  const liveAccount = cfg.STRIPE_SECRET_KEY !== undefined && isLiveProcessorKey(cfg.STRIPE_SECRET_KEY);
  return { soledgic: soledgicProvider, stripe: stripeProvider(processor, { liveAccount }) };
}

/** The use cases' ports, wired to PostgreSQL, NATS and the processor. */
function useCaseDeps(svc: Service<PaymentsConfig>, build: PaymentsBuildDeps, metrics: PaymentsMetrics, wakeProcessorWorker: () => void): PaymentsDeps {
  const cfg = svc.config;
  const processor = processorOf(cfg);
  return {
    ...pgStores(svc.sql),
    ledger: natsLedger(svc.nc, svc.prefix, cfg.PAYMENTS_LEDGER_TIMEOUT_MS),
    refunds: natsRefunds(svc.nc, svc.prefix, cfg.PAYMENTS_LEDGER_TIMEOUT_MS),
    risk: build.risk ?? riskGateFor(svc),
    processor,
    providers: providersOf(cfg, processor),
    log: svc.log,
    now: () => new Date(),
    processorCheckAfterMs: cfg.PAYMENTS_PROCESSOR_CHECK_AFTER_MS,
    afterLedgerPost: build.afterLedgerPost ?? (async () => {}),
    beforeProcessorWork: build.beforeProcessorWork ?? (async () => {}),
    wakeProcessorWorker,
    observeStep: metrics.observeStep,
    processorEventDropped: metrics.processorEventDropped,
  };
}

export async function buildPayments(env: Record<string, string | undefined>, build: PaymentsBuildDeps = {}): Promise<PaymentsService> {
  const svc = await createService({ name: "payments", env, extraEnv: PaymentsEnv, deps: build });
  const metrics = paymentsMetrics(svc.metrics);
  // The deps wake the worker and the worker needs the deps: the wake is bound once the worker exists, right below.
  let wake = (): void => {};
  const deps = useCaseDeps(svc, build, metrics, () => wake());
  registerHandlers(svc, deps, { secret: svc.config.STRIPE_WEBHOOK_SECRET, toleranceSec: svc.config.STRIPE_WEBHOOK_TOLERANCE_S });
  registerInternalReads(svc, deps);
  svc.adminFind(pgFinder(svc.sql));
  const jobs = registerJobs(svc, deps, metrics);
  wake = jobs.processorWorker.wake;
  return Object.assign(svc, { reconciler: jobs.reconciler, processorWorker: jobs.processorWorker.job, deps });
}
