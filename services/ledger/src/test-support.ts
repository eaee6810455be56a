/**
 * Shared setup of the ledger's integration tests: this file's database and prefix (libs/testing), the ledger
 * built in-process and started on NATS, and helpers to call its operations through real RPC.
 */
import { randomBytes } from "node:crypto";
import { rpcSubject, type AuthContext, type RpcReply } from "@treasury/contracts";
import { rpcCall } from "@treasury/service-kit";
import { allowRisk, setupTestEnv, type TestEnv, err, ok } from "@treasury/testing";
import postgres from "postgres";
import { ledgerDeps } from "./deps.ts";
import type { Poster } from "./posting/poster.ts";
import { buildLedger, type LedgerBuildDeps, type LedgerService } from "./service.ts";
import type { Sql } from "./store/db.ts";
import type { LedgerDeps } from "./usecases/deps.ts";
import type { StatementParser } from "./usecases/ports.ts";

export interface LedgerHarness {
  env: TestEnv;
  svc: LedgerService;
  /** The service's posting engine, for calling money-moving use cases directly. */
  poster: Poster;
  /** A pool as the ledger's own role (ledger_svc), for calling use cases directly. */
  sql: Sql;
  /** The use cases' deps over that pool and the service's posting engine (statements are read through RPC only). */
  deps: LedgerDeps;
  call(op: string, auth: AuthContext, req?: { params?: Record<string, string>; query?: Record<string, unknown>; body?: unknown }): Promise<RpcReply>;
  /** Sends a raw PostRequest to `svc.ledger.post`. */
  postRpc(payload: unknown): Promise<RpcReply>;
  close(): Promise<void>;
}

const RPC_TIMEOUT_TEST_MS = 20_000;

export function authFor(orgId: string, livemode = false): AuthContext {
  return { org_id: orgId, livemode, key_id: "key_test", scopes: null, request_id: `req_${randomBytes(16).toString("hex")}` };
}

export function newOrg(): string {
  return `org_${randomBytes(8).toString("hex")}`;
}

/** Direct use-case calls in these tests never read a statement (imports go through RPC, to the service's own parser). */
const noStatements: StatementParser = { parse: () => Promise.reject(new Error("the harness's deps read no statements")) };

export async function startLedger(opts: { poolMax?: number; deps?: LedgerBuildDeps } = {}): Promise<LedgerHarness> {
  const env = await setupTestEnv();
  const svc = await buildLedger(env.env("ledger", { DB_POOL_MAX: String(opts.poolMax ?? 10) }), { risk: allowRisk, ...opts.deps });
  await svc.start();
  const sql = postgres(env.dbUrl("ledger"), { max: opts.poolMax ?? 10, onnotice: () => {} });
  return {
    env,
    svc,
    poster: svc.poster,
    sql,
    deps: ledgerDeps(sql, { poster: svc.poster, parser: noStatements, now: (t) => svc.clock.now(t), risk: svc.deps.risk }),
    // The test superuser's connection: the ledger's own may not publish to its public subjects (ADR 0011).
    call: async (op, auth, req = {}) =>
      rpcCall(
        await env.nats(),
        rpcSubject(env.prefix, "ledger", op),
        { auth, params: req.params ?? {}, query: req.query ?? {}, body: req.body ?? {} },
        { timeoutMs: RPC_TIMEOUT_TEST_MS },
      ),
    postRpc: async (payload) => rpcCall(await env.nats(), `${env.prefix}svc.ledger.post`, payload, { timeoutMs: RPC_TIMEOUT_TEST_MS }),
    close: async () => {
      await sql.end({ timeout: 5 });
      await svc.stop();
      await env.cleanup();
    },
  };
}

export function errorCode(reply: RpcReply): string | null {
  return reply.ok ? null : reply.error.code;
}

export { err, ok };
