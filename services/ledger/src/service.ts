/**
 * The ledger service: participants, wallets, holds, transfers, top-ups, withdrawals, accounting records, reports,
 * bank imports and reconciliation, and the posting engine every other service moves money through
 * (`svc.ledger.post`). Composes: the posting engine (posting/), the use cases' deps (deps.ts), the handlers, the
 * operator commands and `admin find` answers (admin/), the invariant check (jobs/verify.ts) and hold auto-release
 * (jobs/auto-release.ts).
 */
import { createService, riskGateFor, type Job, type RiskGate, type Service, type ServiceConfig, type ServiceDeps } from "@treasury/service-kit";
import { registerAdminCommands } from "./admin/commands.ts";
import { registerAdminFind } from "./admin/find.ts";
import { natsInvoiceLines, registerAgingReads } from "./handlers/aging.ts";
import { LedgerEnv } from "./config.ts";
import { ledgerDeps } from "./deps.ts";
import { registerHandlers } from "./handlers/index.ts";
import { registerImportHandlers } from "./handlers/imports.ts";
import { registerInternalHandlers } from "./handlers/internal.ts";
import { registerSalesActivity } from "./handlers/sales-activity.ts";
import { registerTaxFigures } from "./handlers/tax-figures.ts";
import { registerAutoReleaseJob } from "./jobs/auto-release.ts";
import { registerVerifyJob, type VerifyOutcome } from "./jobs/verify.ts";
import { postBatchSizes, Poster } from "./posting/index.ts";
import { registerStatementParser } from "./statement-parser/register.ts";
import { pgAgingReader } from "./store/aging.ts";
import { pgSalesActivity } from "./store/sales-activity.ts";
import { pgTaxFigures } from "./store/tax-figures.ts";
import type { LedgerDeps } from "./usecases/deps.ts";
import type { StatementParser } from "./usecases/ports.ts";

export interface LedgerBuildDeps extends ServiceDeps {
  /** Pins the balance shard each system-account delta lands on (tests that count shards). */
  pickShard?: () => number;
  /** Reads bank statements; by default a pool of worker threads with a time budget (STATEMENT_PARSE_*). */
  statementParser?: StatementParser;
  /** Risk checks before a transfer or a withdrawal; the kit's gate over NATS unless a test gives its own. */
  risk?: RiskGate;
}

export interface LedgerService extends Service<ServiceConfig<typeof LedgerEnv>> {
  /** The posting engine every money-moving operation goes through. */
  poster: Poster;
  /** What the handlers give the use cases. */
  deps: LedgerDeps;
  /** The periodic invariant check (a leader job: one replica runs it). */
  verify: Job<VerifyOutcome>;
  /** Releases due auto-release holds (a leader job woken by sandbox clock advances); answers how many it released. */
  autoRelease: Job<number>;
}

export async function buildLedger(env: Record<string, string | undefined>, build: LedgerBuildDeps = {}): Promise<LedgerService> {
  const svc = await createService({ name: "ledger", env, deps: build, extraEnv: LedgerEnv });
  const poster = new Poster(svc.sql, {
    log: svc.log,
    slots: svc.config.POST_BATCH_SLOTS,
    batchSizes: postBatchSizes(svc.metrics),
    sandboxAdvance: (orgId) => svc.clock.advancedSeconds(orgId),
    ...(build.pickShard === undefined ? {} : { pickShard: build.pickShard }),
  });
  // Every time-driven rule reads the tenant's clock: real time in live, the org's test clock in sandbox.
  const core = ledgerDeps(svc.sql, {
    poster,
    parser: build.statementParser ?? registerStatementParser(svc),
    now: (t) => svc.clock.now(t),
    clockCopy: svc.clock,
    risk: build.risk ?? riskGateFor(svc),
  });
  // Auto-match asks invoicing about bank lines that name an invoice (usecases/invoice-lines.ts).
  const deps = Object.assign(core, { invoiceLines: natsInvoiceLines(svc) });
  registerHandlers(svc, deps);
  registerImportHandlers(svc, deps);
  registerInternalHandlers(svc, deps);
  registerSalesActivity(svc, pgSalesActivity(svc.sql));
  registerAgingReads(svc, pgAgingReader(svc.sql));
  registerTaxFigures(svc, pgTaxFigures(svc.sql));
  registerAdminCommands(svc, { sql: svc.sql, verifyTimeoutMs: svc.config.LEDGER_VERIFY_TIMEOUT_MS });
  registerAdminFind(svc, svc.sql);
  const verify = registerVerifyJob(svc);
  const autoRelease = registerAutoReleaseJob(svc, deps);
  return Object.assign(svc, { poster, deps, verify, autoRelease });
}
