/**
 * The refunds service: refunds of recorded sales and buyer refund requests (approve / reject / cancel), with a
 * reconciler for refunds stuck between intent and settle and the expiry of requests nobody reviewed. It moves money only through `svc.ledger.post`, whose
 * refund request does the arithmetic (docs/architecture.md, "Money across services").
 */
import { createService, riskGateFor, type Job, type RiskGate, type Service, type ServiceConfig, type ServiceDeps } from "@treasury/service-kit";
import { natsLedger } from "./adapters/ledger.ts";
import { registerAdminCommands } from "./admin/commands.ts";
import { registerAdminFind } from "./admin/find.ts";
import { natsPayments } from "./adapters/payments.ts";
import { RefundsEnv } from "./config.ts";
import { registerHandlers, registerInternal } from "./handlers/index.ts";
import { registerExpiryJob } from "./jobs/expiry.ts";
import { pgRefundsStore } from "./store/refunds-store.ts";
import type { RefundsDeps } from "./usecases/deps.ts";
import { reconcilePass } from "./usecases/reconcile.ts";

type RefundsKitService = Service<ServiceConfig<typeof RefundsEnv>>;

export type RefundsService = RefundsKitService & {
  /** Re-drives refunds stuck between intent and settle; runOnce answers how many it settled. */
  reconciler: Job<number>;
  /** Expires the refund requests due now (leader only: another replica answers undefined); runOnce answers how many. */
  expiry: Job<number>;
  deps: RefundsDeps;
};

export interface RefundsBuildDeps extends ServiceDeps {
  /** Risk checks before a refund is recorded; the kit's gate over NATS unless a test gives its own. */
  risk?: RiskGate;
  /** Runs after a refund intent is recorded, before the ledger post (crash tests stop the process there). */
  afterIntent?: () => Promise<void>;
  /** Runs between a refund's ledger post and its settle step (crash tests stop the process there). */
  afterLedgerPost?: () => Promise<void>;
}

function useCaseDeps(svc: RefundsKitService, deps: RefundsBuildDeps): RefundsDeps {
  const cfg = svc.config;
  return {
    store: pgRefundsStore(svc.sql),
    ledger: natsLedger(svc.nc, svc.prefix, cfg.REFUNDS_LEDGER_TIMEOUT_MS),
    payments: natsPayments(svc.nc, svc.prefix, cfg.REFUNDS_PAYMENTS_TIMEOUT_MS),
    risk: deps.risk ?? riskGateFor(svc),
    log: svc.log,
    now: () => new Date(),
    clock: (tenant) => svc.clock.now(tenant),
    requestTtlDays: cfg.REFUNDS_REQUEST_TTL_DAYS,
    afterIntent: deps.afterIntent ?? (async () => {}),
    afterLedgerPost: deps.afterLedgerPost ?? (async () => {}),
  };
}

export async function buildRefunds(env: Record<string, string | undefined>, deps: RefundsBuildDeps = {}): Promise<RefundsService> {
  const svc = await createService({ name: "refunds", env, extraEnv: RefundsEnv, deps });
  const cfg = svc.config;
  // Refund requests expire on each org's sandbox clock: this service keeps a copy of the ledger's advances.
  svc.followSandboxClock();
  const ucDeps = useCaseDeps(svc, deps);
  registerHandlers(svc, ucDeps);
  registerInternal(svc, ucDeps);
  registerAdminCommands(svc);
  registerAdminFind(svc, svc.sql);
  const reconciler = svc.every({
    name: "reconciler",
    intervalMs: cfg.REFUNDS_RECONCILE_INTERVAL_MS,
    run: () => reconcilePass(ucDeps, { graceMs: cfg.REFUNDS_RECONCILE_GRACE_MS, batchMax: cfg.REFUNDS_RECONCILE_BATCH_MAX }),
  });
  const expiry = registerExpiryJob(svc, ucDeps, { intervalMs: cfg.REFUNDS_EXPIRY_INTERVAL_MS, batchMax: cfg.REFUNDS_EXPIRY_BATCH_MAX });
  return Object.assign(svc, { reconciler, expiry, deps: ucDeps });
}
