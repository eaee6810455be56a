/**
 * The tax service: W-9 tax profiles (the TIN sealed), settings per org, environment and year, calculations and
 * 1099 documents from the ledger's figures as of the tax year's end (`svc.ledger.internal.taxFigures`; this service
 * never posts money), their PDF recipient copies and the year's export (CSV, JSON, IRS FIRE). Events
 * (`tax.document.generated|filed|corrected`) leave through this service's outbox relay.
 */
import { newId } from "@treasury/contracts";
import { createService, natsLedgerPort, piiKeyRing, Sealer, type KeyRing, type Service, type ServiceConfig, type ServiceDeps } from "@treasury/service-kit";
import { pgTaxFinder } from "./admin/find.ts";
import { ledgerFigures } from "./adapters/ledger.ts";
import { pdfkitRenderer } from "./adapters/pdf.ts";
import { TaxEnv } from "./config.ts";
import { registerHandlers } from "./handlers/index.ts";
import { pgDocumentStore } from "./store/documents.ts";
import { pgExportStore } from "./store/exports.ts";
import { pgGenerationStore } from "./store/generations.ts";
import { pgProfileStore, pgSettingsStore } from "./store/profiles.ts";
import { runPendingExports } from "./usecases/exports.ts";
import { runPending } from "./usecases/generations.ts";
import type { JobRunner, LedgerFigures, TaxDeps } from "./usecases/ports.ts";

type TaxConfig = ServiceConfig<typeof TaxEnv>;

/** What a test (or host process) may supply instead of configuration. */
export interface TaxServiceDeps extends ServiceDeps {
  ledger?: LedgerFigures;
  keyRing?: KeyRing;
}

export type TaxService = Service<TaxConfig> & { deps: TaxDeps };

function filerOf(cfg: TaxConfig): TaxDeps["filer"] {
  const payer = {
    tin: cfg.TAX_PAYER_TIN,
    name: cfg.TAX_PAYER_NAME,
    address: cfg.TAX_PAYER_ADDRESS,
    city: cfg.TAX_PAYER_CITY,
    state: cfg.TAX_PAYER_STATE,
    zip: cfg.TAX_PAYER_ZIP,
    phone: cfg.TAX_CONTACT_PHONE,
  };
  const transmitter = {
    ...payer,
    tin: cfg.TAX_TRANSMITTER_TIN,
    name: cfg.TAX_TRANSMITTER_NAME,
    tcc: cfg.TAX_TRANSMITTER_TCC,
    contactName: cfg.TAX_CONTACT_NAME,
    contactEmail: cfg.TAX_CONTACT_EMAIL,
  };
  return { transmitter, payer };
}

/**
 * A runner of durable jobs (generations, exports) on the kit's job loop, and the API's wait for one job: a job
 * asked for is taken up at once by a pass; its waiters hear when a pass on this replica ends it.
 */
function jobRunner(
  svc: Service<TaxConfig>,
  name: string,
  intervalMs: number,
  waitMs: number,
  run: (signal: AbortSignal, finished: (id: string) => void) => Promise<string[]>,
): JobRunner {
  const waiters = new Map<string, Set<() => void>>();
  const finished = (id: string) => {
    for (const w of waiters.get(id) ?? []) w();
    waiters.delete(id);
  };
  const job = svc.every({ name, intervalMs, run: (_leader, signal) => run(signal, finished) });
  return {
    waitMs,
    async runUntilDone(id, ms) {
      let timer: NodeJS.Timeout | undefined;
      let wake: () => void = () => undefined;
      const done = new Promise<void>((resolve) => {
        wake = resolve;
        waiters.set(id, (waiters.get(id) ?? new Set()).add(resolve));
        timer = setTimeout(resolve, Math.max(0, ms));
      });
      job.runOnce().catch((err: unknown) => svc.log.error({ err, job: name }, `${name} pass failed; it runs again at the next pass`));
      await done;
      clearTimeout(timer);
      waiters.get(id)?.delete(wake);
    },
  };
}

export async function buildTax(env: Record<string, string | undefined>, deps: TaxServiceDeps = {}): Promise<TaxService> {
  const svc = await createService({ name: "tax", env, extraEnv: TaxEnv, deps });
  const cfg = svc.config;
  let ring: KeyRing | undefined;
  try {
    ring = deps.keyRing ?? piiKeyRing(cfg);
  } catch (e) {
    await svc.stop();
    throw e;
  }
  if (ring === undefined) svc.log.warn("PII_KEYS is not set: tax profiles and FIRE files are refused until encryption keys are configured");
  const ledger = natsLedgerPort(svc.nc, svc.prefix, { caller: "tax", timeoutMs: cfg.TAX_LEDGER_TIMEOUT_MS });
  const useCaseDeps: TaxDeps = {
    profiles: pgProfileStore(svc.sql),
    settings: pgSettingsStore(svc.sql),
    documents: pgDocumentStore(svc.sql),
    generations: pgGenerationStore(svc.sql),
    exports: pgExportStore(svc.sql),
    ledger: deps.ledger ?? ledgerFigures(ledger),
    sealer: ring === undefined ? undefined : new Sealer(ring),
    pdf: pdfkitRenderer(),
    filer: filerOf(cfg),
    now: (tenant) => svc.clock.now(tenant),
    newId: () => newId("taxdoc"),
    newGenerationId: () => newId("taxgen"),
    newExportId: () => newId("taxexp"),
    generatePageSize: cfg.TAX_GENERATE_PAGE_SIZE,
    generationLeaseMs: cfg.TAX_GENERATION_LEASE_MS,
    exportBytesMax: cfg.TAX_EXPORT_BYTES_MAX,
  };
  // "A year in the future" and "a year not ended" are read on the tenant's clock (a sandbox's test clock, ADR 0017).
  svc.followSandboxClock();
  const interval = cfg.TAX_GENERATION_INTERVAL_MS;
  const wait = cfg.TAX_GENERATE_WAIT_MS;
  registerHandlers(svc, useCaseDeps, {
    generations: jobRunner(svc, "generations", interval, wait, (signal, done) => runPending(useCaseDeps, signal, done)),
    exports: jobRunner(svc, "exports", interval, wait, (signal, done) => runPendingExports(useCaseDeps, signal, done)),
  });
  svc.adminFind(pgTaxFinder(svc.sql));
  return Object.assign(svc, { deps: useCaseDeps });
}
