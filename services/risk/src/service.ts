/**
 * The risk service: fraud policies per org and environment, the evaluation of every proposed money movement
 * (`svc.risk.internal.evaluate`, and on demand through the API) with the counters velocity and budget policies
 * count against (ADR 0018), the operators' review of evaluations under review (admin/commands.ts), and alerts by
 * webhook and email. Events (`risk.review_required`, `risk.decided`) leave through this service's outbox relay.
 */
import { newId } from "@treasury/contracts";
import { registerFailModes } from "./admin/fail-modes.ts";
import { pgFailModeReader } from "./store/fail-modes.ts";
import { createService, natsLedgerPort, type Service, type ServiceConfig, type ServiceDeps } from "@treasury/service-kit";
import { alertChannels } from "./adapters/alerts.ts";
import { ledgerActivity } from "./adapters/ledger.ts";
import { registerAdminCommands } from "./admin/commands.ts";
import { pgRiskFinder } from "./admin/find.ts";
import { RiskEnv } from "./config.ts";
import { registerHandlers } from "./handlers/index.ts";
import { registerAlertSender } from "./jobs/alerts.ts";
import { pgAlertConfigStore, pgAlertDeliveryStore } from "./store/alerts.ts";
import { pgEvaluationStore, purgeCounterEvents } from "./store/evaluations.ts";
import { pgPolicyStore } from "./store/policies.ts";
import type { AlertSender, LedgerActivity, RiskDeps } from "./usecases/ports.ts";

/** What a test (or host process) may supply instead of configuration. */
export interface RiskServiceDeps extends ServiceDeps {
  ledger?: LedgerActivity;
  alertSender?: AlertSender;
}

export type RiskService = Service<ServiceConfig<typeof RiskEnv>> & { deps: RiskDeps; sendAlerts(): Promise<number> };

/** Counter rows are kept past the longest window a policy may have: a budget's year. */
const COUNTER_RETENTION_DAYS = 400;

const ID_PREFIX = { policy: "fpol", evaluation: "feval", alertConfig: "falrt", alertDelivery: "fald" } as const;

export async function buildRisk(env: Record<string, string | undefined>, deps: RiskServiceDeps = {}): Promise<RiskService> {
  const svc = await createService({ name: "risk", env, extraEnv: RiskEnv, deps });
  const cfg = svc.config;
  const ledger = natsLedgerPort(svc.nc, svc.prefix, { caller: "risk", timeoutMs: cfg.RISK_LEDGER_TIMEOUT_MS });
  const channels = alertChannels({ smtpUrl: cfg.RISK_SMTP_URL, from: cfg.RISK_ALERT_FROM, timeoutMs: cfg.RISK_ALERT_TIMEOUT_MS });
  svc.onShutdown(async () => channels.close());
  const useCaseDeps: RiskDeps = {
    policies: pgPolicyStore(svc.sql),
    evaluations: pgEvaluationStore(svc.sql),
    alertConfigs: pgAlertConfigStore(svc.sql),
    alertDeliveries: pgAlertDeliveryStore(svc.sql),
    alertSender: deps.alertSender ?? channels,
    ledger: deps.ledger ?? ledgerActivity(ledger),
    failModes: pgFailModeReader(svc.sql),
    now: (tenant) => svc.clock.now(tenant),
    newId: (kind) => newId(ID_PREFIX[kind]),
    allowPrivateAlertUrls: cfg.RISK_ALERT_ALLOW_PRIVATE_URLS === "true",
  };
  // Windows are measured on the tenant's clock: a sandbox clock's advance moves them too (ADR 0017).
  svc.followSandboxClock();
  registerHandlers(svc, useCaseDeps);
  registerAdminCommands(svc, useCaseDeps);
  registerFailModes(svc);
  svc.adminFind(pgRiskFinder(svc.sql));
  svc.retention.add({ name: "risk.counter_events", days: COUNTER_RETENTION_DAYS, purge: (before, limit) => purgeCounterEvents(svc.sql, before, limit) });
  const alerts = registerAlertSender(svc, useCaseDeps, { intervalMs: cfg.RISK_ALERT_INTERVAL_MS, batchMax: cfg.RISK_ALERT_BATCH_MAX });
  return Object.assign(svc, { deps: useCaseDeps, sendAlerts: async () => (await alerts.runOnce()) ?? 0 });
}
