/**
 * Shared setup of the tax integration tests: this file's database and prefix (libs/testing), the service built
 * in-process, and a stand-in answering the ledger's `taxFigures` and `taxSources` over real NATS from source
 * transactions a test sets per org and environment (a service may not import another; the end-to-end tests run the
 * real ledger). The stand-in pages as the ledger does, so the service's paging is what is tested. Calls go through
 * the test superuser's connection, as the gateway's would.
 */
import { randomBytes } from "node:crypto";
import type { NatsConnection } from "@nats-io/transport-node";
import { adminOperation, rpcSubject, schemas, type AuthContext, type RpcReply } from "@treasury/contracts";
import { createLogger, generateKeyRingEntry, rpcCall, RpcServer } from "@treasury/service-kit";
import { setupTestEnv, type TestEnv, err, ok } from "@treasury/testing";
import { buildTax, type TaxService, type TaxServiceDeps } from "./service.ts";

const RPC_TIMEOUT_TEST_MS = 20_000;

export function authFor(orgId: string, livemode = false): AuthContext {
  return { org_id: orgId, livemode, key_id: "key_test", scopes: null, request_id: `req_${randomBytes(16).toString("hex")}` };
}

export function newOrg(): string {
  return `org_${randomBytes(8).toString("hex")}`;
}

/** One transaction behind a participant's figures, as the ledger answers it. */
export type Source = schemas.TaxSource;

export interface TaxHarness {
  env: TestEnv;
  svc: TaxService;
  nc: NatsConnection;
  /** Replaces what the stand-in holds for a participant in an org and environment. */
  setSources(orgId: string, livemode: boolean, participantId: string, sources: Source[]): void;
  /** The figures the stand-in answers for a participant of that year (as the ledger computes them). */
  figuresOf(orgId: string, livemode: boolean, participantId: string, taxYear: number): schemas.TaxFigures;
  /** Holds the stand-in's answers to page reads of figures until the function it answers is called. */
  holdFigures(): () => void;
  call(op: string, auth: AuthContext, req?: { params?: Record<string, string>; query?: Record<string, unknown>; body?: unknown }): Promise<RpcReply>;
  /** An operator command, as the admin CLI sends it. */
  admin(command: string, request?: { flags?: Record<string, string | boolean>; reason?: string }): Promise<RpcReply>;
  restart(env?: Record<string, string>, deps?: TaxServiceDeps): Promise<TaxService>;
  close(): Promise<void>;
}

const yearOf = (s: Source) => new Date(s.accounted_at).getUTCFullYear();

/** The ledger's figures from its sources: sales make gross, count and months; refunds (signed) make refunds. */
export function figuresFrom(participantId: string, sources: readonly Source[]): schemas.TaxFigures {
  const f = { participant_id: participantId, gross_cents: 0, refunds_cents: 0, transaction_count: 0, monthly_cents: Array.from({ length: 12 }, () => 0) };
  for (const s of sources) {
    if (s.role === "refund") {
      f.refunds_cents += s.amount_cents;
      continue;
    }
    f.gross_cents += s.amount_cents;
    f.transaction_count += 1;
    const m = new Date(s.accounted_at).getUTCMonth();
    f.monthly_cents[m] = (f.monthly_cents[m] ?? 0) + s.amount_cents;
  }
  return f;
}

function standIn(nc: NatsConnection, prefix: string, book: Map<string, Map<string, Source[]>>, gate: { held: Promise<void> }) {
  const ledger = new RpcServer({ nc, prefix, service: "ledger", log: createLogger({ service: "ledger-standin", level: "silent" }), concurrencyMax: 64 });
  const tenantBook = (org: string, live: boolean) => book.get(`${org}|${live}`) ?? new Map<string, Source[]>();
  const inYear = (sources: readonly Source[], year: number) => sources.filter((s) => yearOf(s) === year);
  ledger.handleRaw(schemas.TAX_FIGURES_OPERATION, async (payload) => {
    const req = schemas.TaxFiguresRequest.parse(payload);
    const mine = tenantBook(req.org_id, req.livemode);
    if (req.participant_ids === undefined) await gate.held;
    if (req.participant_ids !== undefined) {
      const known = req.participant_ids.filter((id) => mine.has(id));
      const figures = known.map((id) => figuresFrom(id, inYear(mine.get(id) ?? [], req.tax_year)));
      const unknown = req.participant_ids.filter((id) => !mine.has(id));
      return { ok: true, status: 200, body: { figures, next_after: null, unknown_participant_ids: unknown } };
    }
    const page = [...mine.keys()]
      .sort()
      .filter((id) => id > (req.after ?? ""))
      .slice(0, req.limit);
    const figures = page.map((id) => figuresFrom(id, inYear(mine.get(id) ?? [], req.tax_year))).filter((f) => f.gross_cents > 0 || f.refunds_cents !== 0);
    return {
      ok: true,
      status: 200,
      body: { figures, next_after: page.length === req.limit ? (page[page.length - 1] ?? null) : null, unknown_participant_ids: [] },
    };
  });
  ledger.handleRaw(schemas.TAX_SOURCES_OPERATION, async (payload) => {
    const req = schemas.TaxSourcesRequest.parse(payload);
    const sources = inYear(tenantBook(req.org_id, req.livemode).get(req.participant_id) ?? [], req.tax_year)
      .filter((s) => s.transaction_id > (req.after ?? ""))
      .sort((a, b) => (a.transaction_id < b.transaction_id ? -1 : 1))
      .slice(0, req.limit);
    return {
      ok: true,
      status: 200,
      body: { sources, next_after: sources.length === req.limit ? (sources[sources.length - 1]?.transaction_id ?? null) : null },
    };
  });
  return ledger;
}

export async function startTax(opts: { env?: Record<string, string>; deps?: TaxServiceDeps } = {}): Promise<TaxHarness> {
  const env = await setupTestEnv();
  const nc = await env.nats();
  const book = new Map<string, Map<string, Source[]>>();
  const gate = { held: Promise.resolve() };
  const ledger = standIn(nc, env.prefix, book, gate);
  ledger.start();
  await nc.flush();
  const started: TaxService[] = [];
  const keys = generateKeyRingEntry("taxtest");
  const build = async (extra: Record<string, string> = {}, deps: TaxServiceDeps = {}) => {
    const svc = await buildTax(env.env("tax", { PII_KEYS: keys, ...opts.env, ...extra }), { ...opts.deps, ...deps });
    await svc.start();
    started.push(svc);
    return svc;
  };
  const svc = await build();
  const call = (subject: string, payload: unknown) => rpcCall(nc, subject, payload, { timeoutMs: RPC_TIMEOUT_TEST_MS });
  return {
    env,
    svc,
    nc,
    setSources(orgId, livemode, participantId, sources) {
      const key = `${orgId}|${livemode}`;
      const mine = book.get(key) ?? new Map<string, Source[]>();
      mine.set(participantId, sources);
      book.set(key, mine);
    },
    figuresOf: (orgId, livemode, participantId, taxYear) =>
      figuresFrom(
        participantId,
        (book.get(`${orgId}|${livemode}`)?.get(participantId) ?? []).filter((s) => yearOf(s) === taxYear),
      ),
    holdFigures() {
      let release: () => void = () => undefined;
      gate.held = new Promise((resolve) => (release = resolve));
      return () => {
        gate.held = Promise.resolve();
        release();
      };
    },
    call: (op, auth, req = {}) => call(rpcSubject(env.prefix, "tax", op), { auth, params: req.params ?? {}, query: req.query ?? {}, body: req.body ?? {} }),
    admin: (command, request = {}) => call(rpcSubject(env.prefix, "tax", adminOperation(command)), { actor: "ops:alice", flags: {}, ...request }),
    restart: build,
    close: async () => {
      await Promise.all(started.map((s) => s.stop()));
      await ledger.drain();
      await env.cleanup();
    },
  };
}

/** `count` sales of `cents` each in `year`, one a month in turn, with ids `${prefix}_s…` (sortable). */
export function sales(prefix: string, year: number, count: number, cents: number): Source[] {
  return Array.from({ length: count }, (_, i) => ({
    transaction_id: `txn_${prefix}_s${String(i).padStart(5, "0")}`,
    kind: "sale",
    role: "sale" as const,
    amount_cents: cents,
    accounted_at: new Date(Date.UTC(year, i % 12, 1 + (i % 28), 12)).toISOString(),
  }));
}

export function refund(prefix: string, year: number, cents: number, month = 5): Source {
  return {
    transaction_id: `txn_${prefix}_r0`,
    kind: "refund",
    role: "refund",
    amount_cents: cents,
    accounted_at: new Date(Date.UTC(year, month, 15)).toISOString(),
  };
}

export { err, ok };
