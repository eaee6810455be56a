/**
 * The payouts service: creators' bank accounts, payout eligibility, payouts (sandbox simulated and paid at
 * once; live through the ACH rail: files cut on schedule or on demand, settled, returns ingested), and the
 * reconciler. It moves money only through `svc.ledger.post`. Use cases see ports only (usecases/ports.ts); this
 * file wires the stores, adapters, handlers, operator commands and jobs (svc.every) behind them.
 */
import {
  createService,
  type Job,
  type KeyRing,
  piiKeyRing,
  riskGateFor,
  type RiskGate,
  Sealer,
  type Service,
  type ServiceConfig,
  type ServiceDeps,
} from "@treasury/service-kit";
import { achDropRail } from "./adapters/bank-rail.ts";
import { natsCompliance } from "./adapters/compliance.ts";
import { natsLedger } from "./adapters/ledger.ts";
import { registerAdminCommands } from "./admin/commands.ts";
import { registerReturnFee } from "./admin/return-fee.ts";
import { registerRunSchedules } from "./admin/run-schedules.ts";
import { pgPayoutsFinder } from "./admin/find.ts";
import { PayoutsEnv } from "./config.ts";
import { registerHandlers } from "./handlers/index.ts";
import { registerRiskDecisions } from "./handlers/risk-decided.ts";
import { registerJobs } from "./jobs/index.ts";
import { pgBankAccountStore } from "./store/bank-accounts.ts";
import { pgAchFileStore } from "./store/files.ts";
import { pgPayoutStore } from "./store/payouts.ts";
import { pgScheduleStore } from "./store/schedules.ts";
import { pgSealedValueStore } from "./store/sealed.ts";
import type { PayoutsDeps } from "./usecases/deps.ts";
import type { RunSummary } from "./usecases/run-schedules.ts";
import type { BankRail, ComplianceDirectory } from "./usecases/ports.ts";

type PayoutsConfig = ServiceConfig<typeof PayoutsEnv>;
export type PayoutsService = Service<PayoutsConfig> & {
  reconciler: Job<number>;
  /** The payout schedules' pass (`runOnce()`: undefined on a replica that is not the leader). */
  scheduler: Job<RunSummary>;
  deps: PayoutsDeps;
  /** One reseal pass now (it also runs every PAYOUTS_RESEAL_INTERVAL_MS with retired keys in the ring); answers how many values moved. */
  reseal(): Promise<number>;
};

/** What a test (or host process) may supply instead of configuration, and the crash points of the recovery tests. */
export interface PayoutsBuildDeps extends ServiceDeps {
  keyRing?: KeyRing;
  compliance?: ComplianceDirectory;
  /** Risk checks before a payout; the kit's gate over NATS unless a test gives its own. */
  risk?: RiskGate;
  rail?: BankRail;
  now?: () => Date;
  /** Runs after a payout's intent is recorded, before its ledger post. */
  afterIntent?: () => Promise<void>;
  /** Runs between a payout's ledger post and its settle step. */
  afterLedgerPost?: () => Promise<void>;
}

/** The ACH drop rail when its directory and origin are all configured; undefined (live payouts refused) otherwise. */
function railOf(cfg: PayoutsConfig): BankRail | undefined {
  const {
    PAYOUTS_ACH_DIR: dir,
    PAYOUTS_ACH_IMMEDIATE_DESTINATION: dest,
    PAYOUTS_ACH_IMMEDIATE_ORIGIN: origin,
    PAYOUTS_ACH_COMPANY_NAME: company,
    PAYOUTS_ACH_COMPANY_ID: companyId,
    PAYOUTS_ACH_ODFI_ROUTING: odfi,
  } = cfg;
  if (dir === undefined || dest === undefined || origin === undefined || company === undefined || companyId === undefined || odfi === undefined)
    return undefined;
  return achDropRail({
    dir,
    origin: {
      immediateDestination: dest,
      immediateDestinationName: cfg.PAYOUTS_ACH_IMMEDIATE_DESTINATION_NAME,
      immediateOrigin: origin,
      immediateOriginName: cfg.PAYOUTS_ACH_IMMEDIATE_ORIGIN_NAME,
      companyName: company,
      companyId,
      odfiRouting: odfi,
      entryDescription: cfg.PAYOUTS_ACH_ENTRY_DESCRIPTION,
    },
  });
}

export async function buildPayouts(env: Record<string, string | undefined>, deps: PayoutsBuildDeps = {}): Promise<PayoutsService> {
  const svc = await createService({ name: "payouts", env, extraEnv: PayoutsEnv, deps });
  const cfg = svc.config;
  let ring: KeyRing | undefined;
  try {
    ring = deps.keyRing ?? piiKeyRing(cfg);
  } catch (e) {
    await svc.stop();
    throw e;
  }
  // Sandbox payouts need no keys, so the service is ready without them; what needs them answers 503 and says why.
  if (ring === undefined) svc.log.warn("PII_KEYS is not set: bank accounts and live payouts are refused until encryption keys are configured");
  // Payout schedules run on each org's sandbox clock: this service keeps a copy of the ledger's advances.
  svc.followSandboxClock();
  const useCaseDeps = useCaseDepsOf(svc, deps, ring);
  registerHandlers(svc, useCaseDeps);
  registerRiskDecisions(svc, useCaseDeps);
  registerAdminCommands(svc, useCaseDeps);
  registerReturnFee(svc);
  registerRunSchedules(svc, useCaseDeps, { batchMax: cfg.PAYOUTS_SCHEDULE_BATCH_MAX, leaseMs: cfg.PAYOUTS_SCHEDULE_LEASE_MS });
  svc.adminFind(pgPayoutsFinder(svc.sql));
  const jobs = registerJobs(svc, useCaseDeps, {
    reconcileIntervalMs: cfg.PAYOUTS_RECONCILE_INTERVAL_MS,
    graceMs: cfg.PAYOUTS_RECONCILE_GRACE_MS,
    batchMax: cfg.PAYOUTS_RECONCILE_BATCH_MAX,
    cutIntervalMs: cfg.PAYOUTS_ACH_CUT_INTERVAL_MS,
    resealIntervalMs: cfg.PAYOUTS_RESEAL_INTERVAL_MS,
    resealBatchMax: cfg.PAYOUTS_RESEAL_BATCH_MAX,
    keyIds: ring === undefined ? [] : [...ring.keys.keys()],
    scheduleIntervalMs: cfg.PAYOUTS_SCHEDULE_INTERVAL_MS,
    scheduleBatchMax: cfg.PAYOUTS_SCHEDULE_BATCH_MAX,
    scheduleLeaseMs: cfg.PAYOUTS_SCHEDULE_LEASE_MS,
  });
  return Object.assign(svc, { reconciler: jobs.reconciler, scheduler: jobs.schedules, deps: useCaseDeps, reseal: jobs.reseal });
}

/** The use cases' ports: PostgreSQL stores, the ledger and kyc over NATS, the sealer, the rail, the clock. */
function useCaseDepsOf(svc: Service<PayoutsConfig>, deps: PayoutsBuildDeps, ring: KeyRing | undefined): PayoutsDeps {
  const cfg = svc.config;
  return {
    payouts: pgPayoutStore(svc.sql),
    bankAccounts: pgBankAccountStore(svc.sql),
    achFiles: pgAchFileStore(svc.sql),
    sealedValues: pgSealedValueStore(svc.sql),
    schedules: pgScheduleStore(svc.sql),
    ledger: natsLedger(svc.nc, svc.prefix, cfg.PAYOUTS_LEDGER_TIMEOUT_MS),
    compliance: deps.compliance ?? natsCompliance(svc.nc, svc.prefix, cfg.PAYOUTS_KYC_TIMEOUT_MS),
    risk: deps.risk ?? riskGateFor(svc),
    sealer: ring === undefined ? undefined : new Sealer(ring),
    rail: deps.rail ?? railOf(cfg),
    log: svc.log,
    now: deps.now ?? (() => new Date()),
    clock: { now: (tenant) => svc.clock.now(tenant), advanced: () => svc.clock.advanced(), sync: (org, s) => svc.clock.sync(org, s) },
    afterIntent: deps.afterIntent ?? (async () => {}),
    afterLedgerPost: deps.afterLedgerPost ?? (async () => {}),
    settlementDays: cfg.PAYOUTS_ACH_SETTLEMENT_DAYS,
    fileEntriesMax: cfg.PAYOUTS_ACH_FILE_ENTRIES_MAX,
  };
}
