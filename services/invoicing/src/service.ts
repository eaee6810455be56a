/**
 * The invoicing service: invoices numbered per org and environment, their hosted pages, payments against them
 * (the API, the SDK's receive-payment, and bank lines that name them), AR and AP aging from the ledger's entries,
 * and `invoice.*` events through this service's outbox relay. Money moves only through the ledger: every post is
 * an intent recorded with the invoice's change, driven under a deterministic reference (usecases/drive.ts), and
 * re-driven by the reconciler.
 */
import { newId } from "@treasury/contracts";
import { createService, type Job, type Service, type ServiceConfig, type ServiceDeps } from "@treasury/service-kit";
import { natsLedger } from "./adapters/ledger.ts";
import { pgInvoicingFinder } from "./admin/find.ts";
import { InvoicingEnv } from "./config.ts";
import { registerHandlers } from "./handlers/index.ts";
import { registerJobs } from "./jobs/index.ts";
import { pgInvoiceStore } from "./store/invoices.ts";
import { pgPostingStore } from "./store/postings.ts";
import type { InvoicingDeps, LedgerClient } from "./usecases/ports.ts";

/** What a test (or host process) may supply instead of configuration. */
export interface InvoicingServiceDeps extends ServiceDeps {
  ledger?: LedgerClient;
  /** Crash point between recording an intent and driving it (recovery tests). */
  afterIntent?: () => Promise<void>;
}

export type InvoicingService = Service<ServiceConfig<typeof InvoicingEnv>> & { deps: InvoicingDeps; reconcile: Job<number>; overdue: Job<number> };

const ID_PREFIX = { invoice: "inv", payment: "invp", posting: "ilp" } as const;

export async function buildInvoicing(env: Record<string, string | undefined>, deps: InvoicingServiceDeps = {}): Promise<InvoicingService> {
  const svc = await createService({ name: "invoicing", env, extraEnv: InvoicingEnv, deps });
  const cfg = svc.config;
  const useCaseDeps: InvoicingDeps = {
    invoices: pgInvoiceStore(svc.sql),
    postings: pgPostingStore(svc.sql),
    ledger: deps.ledger ?? natsLedger(svc.nc, svc.prefix, cfg.INVOICING_LEDGER_TIMEOUT_MS),
    now: (tenant) => svc.clock.now(tenant),
    newId: (kind) => newId(ID_PREFIX[kind]),
    ...(deps.afterIntent === undefined ? {} : { afterIntent: deps.afterIntent }),
  };
  // Due dates and aging read the tenant's clock: a sandbox clock's advance makes invoices overdue (ADR 0017).
  svc.followSandboxClock();
  registerHandlers(svc, useCaseDeps);
  svc.adminFind(pgInvoicingFinder(svc.sql));
  const jobs = registerJobs(svc, useCaseDeps, {
    reconcileIntervalMs: cfg.INVOICING_RECONCILE_INTERVAL_MS,
    reconcileGraceMs: cfg.INVOICING_RECONCILE_GRACE_MS,
    overdueIntervalMs: cfg.INVOICING_OVERDUE_INTERVAL_MS,
    batchMax: cfg.INVOICING_BATCH_MAX,
  });
  return Object.assign(svc, { deps: useCaseDeps, ...jobs });
}
