/**
 * Shared setup of the risk integration tests: this file's database and prefix (libs/testing), the service built
 * in-process, and a stand-in answering the ledger's `salesActivity` over real NATS with figures a test sets (a
 * service may not import another; the end-to-end tests run the real ledger). Calls go through the test
 * superuser's connection, as the gateway's and the money path's would.
 */
import { randomBytes } from "node:crypto";
import type { NatsConnection } from "@nats-io/transport-node";
import { adminOperation, internalSubject, rpcSubject, schemas, type AuthContext, type RpcReply } from "@treasury/contracts";
import { createLogger, rpcCall, RpcServer } from "@treasury/service-kit";
import { setupTestEnv, type TestEnv, err, ok } from "@treasury/testing";
import { buildRisk, type RiskService, type RiskServiceDeps } from "./service.ts";

const RPC_TIMEOUT_TEST_MS = 20_000;

export function authFor(orgId: string, livemode = false): AuthContext {
  return { org_id: orgId, livemode, key_id: "key_test", scopes: null, request_id: `req_${randomBytes(16).toString("hex")}` };
}

export function newOrg(): string {
  return `org_${randomBytes(8).toString("hex")}`;
}

export interface RiskHarness {
  env: TestEnv;
  svc: RiskService;
  nc: NatsConnection;
  /** The figures the ledger stand-in answers for a participant (or "" for the whole org). */
  setSales(orgId: string, participantId: string, activity: schemas.SalesActivity): void;
  /** How many times the stand-in was asked. */
  ledgerReads(): number;
  call(op: string, auth: AuthContext, req?: { params?: Record<string, string>; query?: Record<string, unknown>; body?: unknown }): Promise<RpcReply>;
  /** The money path's `svc.risk.internal.evaluate`. */
  evaluate(payload: Record<string, unknown>): Promise<RpcReply>;
  /** An operator command, as the admin CLI sends it. */
  admin(command: string, request?: { flags?: Record<string, string | boolean>; reason?: string }): Promise<RpcReply>;
  /** Builds and starts the service again on the same database and prefix (the first is stopped by the caller). */
  restart(env?: Record<string, string>, deps?: RiskServiceDeps): Promise<RiskService>;
  close(): Promise<void>;
}

export async function startRisk(opts: { env?: Record<string, string>; deps?: RiskServiceDeps } = {}): Promise<RiskHarness> {
  const env = await setupTestEnv();
  const nc = await env.nats();
  const sales = new Map<string, schemas.SalesActivity>();
  let reads = 0;
  // The kit's own RPC server, so the stand-in speaks the same wire (batched requests included) as the ledger.
  const ledger = new RpcServer({
    nc,
    prefix: env.prefix,
    service: "ledger",
    log: createLogger({ service: "ledger-standin", level: "silent" }),
    concurrencyMax: 64,
  });
  ledger.handleRaw(schemas.SALES_ACTIVITY_OPERATION, async (payload) => {
    reads += 1;
    const req = schemas.SalesActivityRequest.parse(payload);
    const activity = sales.get(`${req.org_id}|${req.participant_id ?? ""}`) ?? { sales_count: 0, gross_cents: 0, refunded_cents: 0 };
    return { ok: true, status: 200, body: { activity } };
  });
  ledger.start();
  await nc.flush();
  const started: RiskService[] = [];
  const build = async (extra: Record<string, string> = {}, deps: RiskServiceDeps = {}) => {
    const svc = await buildRisk(env.env("risk", { RISK_ALERT_ALLOW_PRIVATE_URLS: "true", RISK_ALERT_INTERVAL_MS: "0", ...opts.env, ...extra }), {
      ...opts.deps,
      ...deps,
    });
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
    setSales: (orgId, participantId, activity) => sales.set(`${orgId}|${participantId}`, activity),
    ledgerReads: () => reads,
    call: (op, auth, req = {}) => call(rpcSubject(env.prefix, "risk", op), { auth, params: req.params ?? {}, query: req.query ?? {}, body: req.body ?? {} }),
    evaluate: (payload) => call(internalSubject(env.prefix, "risk", schemas.RISK_EVALUATE_OPERATION), payload),
    admin: (command, request = {}) => call(rpcSubject(env.prefix, "risk", adminOperation(command)), { actor: "ops:alice", flags: {}, ...request }),
    restart: build,
    close: async () => {
      await Promise.all(started.map((s) => s.stop()));
      await ledger.drain();
      await env.cleanup();
    },
  };
}

/** The evaluation of a reply (internal or public). */
export function evaluationOf(reply: RpcReply): schemas.RiskEvaluation & { duplicate?: boolean } {
  const body = ok(reply).body;
  return { ...(body["evaluation"] as schemas.RiskEvaluation), ...(body["duplicate"] === undefined ? {} : { duplicate: body["duplicate"] as boolean }) };
}

export { err, ok };
