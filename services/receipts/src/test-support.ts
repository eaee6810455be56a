/**
 * Shared setup of the receipts integration tests: this file's database and prefix (libs/testing), receipts
 * built in-process and the ledger and payments as real processes of their own (a service never imports
 * another), all on real PostgreSQL and NATS; RPC calls as the gateway makes them, and helpers that record real
 * sales (a sandbox checkout completed through payments, a recorded sale, a transaction that is no sale).
 */
import { randomBytes } from "node:crypto";
import { ledgerPostSubject, rpcSubject, type AuthContext, type RpcReply, type schemas } from "@treasury/contracts";
import { generateKeyRingEntry, parseKeyRing, rpcCall, Sealer } from "@treasury/service-kit";
import { freePort, setupTestEnv, spawnService, type SpawnedService, type TestEnv } from "@treasury/testing";
import pino from "pino";
import postgres from "postgres";
import { buildReceipts, type ReceiptsService } from "./service.ts";

const RPC_TIMEOUT_TEST_MS = 20_000;
export const ALT_BASE = "http://alt.test:8081";

export function authFor(orgId: string, livemode = false): AuthContext {
  return { org_id: orgId, livemode, key_id: "key_test", scopes: null, request_id: `req_${randomBytes(16).toString("hex")}` };
}

export function newOrg(): string {
  return `org_${randomBytes(8).toString("hex")}`;
}

/** A sealing key ring of one fresh key, as RECEIPTS_SEALING_KEYS takes it. */
export function newSealingKeys(kid = "r1"): string {
  return generateKeyRingEntry(kid);
}

export function sealerFor(keys: string): Sealer {
  return new Sealer(parseKeyRing(keys));
}

export interface Harness {
  env: TestEnv;
  /** RECEIPTS_SEALING_KEYS of the receipts service. */
  sealingKeys: string;
  receipts: ReceiptsService;
  /** Every line the receipts service logged, at trace level. */
  logLines: string[];
  /** A pool as the receipts service's own role (receipts_svc). */
  sql: postgres.Sql;
  call(
    service: string,
    op: string,
    auth: AuthContext,
    req?: { params?: Record<string, string>; query?: Record<string, unknown>; body?: unknown },
  ): Promise<RpcReply>;
  /** A receipts operation; its body on success, throws naming the error otherwise. */
  ok(op: string, auth: AuthContext, req?: { params?: Record<string, string>; body?: unknown }): Promise<{ status: number; body: Record<string, unknown> }>;
  /** A receipts operation that must fail; its typed error. */
  err(
    op: string,
    auth: AuthContext,
    req?: { params?: Record<string, string>; body?: unknown },
  ): Promise<{ code: string; message: string; details?: Array<{ path: string }>; extra?: Record<string, unknown> }>;
  participant(auth: AuthContext, displayName?: string): Promise<string>;
  /** A sandbox checkout session, completed through payments unless `complete` is false: its id and sale. */
  checkout(auth: AuthContext, opts?: { complete?: boolean; amount?: number; productName?: string }): Promise<{ id: string; saleTransactionId: string | null }>;
  /** A sale recorded with record-sale: its transaction id. */
  recordSale(auth: AuthContext, amount?: number): Promise<string>;
  /** A transaction that is not a sale: its id. */
  adjustment(auth: AuthContext): Promise<string>;
  close(): Promise<void>;
}

export async function startHarness(opts: { receiptsEnv?: Record<string, string> } = {}): Promise<Harness> {
  const env = await setupTestEnv();
  const sealingKeys = newSealingKeys();
  const spawned: SpawnedService[] = [];
  for (const name of ["ledger", "payments"])
    spawned.push(spawnService(name, env.env(name as "ledger" | "payments", { HEALTH_PORT: String(await freePort()) })));
  const logLines: string[] = [];
  const log = pino({ level: "trace" }, { write: (line: string) => void logLines.push(line) });
  const receipts = await buildReceipts(env.env("receipts", { RECEIPTS_SEALING_KEYS: sealingKeys, ...opts.receiptsEnv }), { log });
  await receipts.start();
  await Promise.all(spawned.map((p) => p.ready));
  const sql = postgres(env.dbUrl("receipts"), { max: 4, onnotice: () => {} });
  // The test superuser's connection: receipts' own may call only the internal reads it needs (ADR 0011).
  const call: Harness["call"] = async (service, op, auth, req = {}) =>
    rpcCall(
      await env.nats(),
      rpcSubject(env.prefix, service, op),
      { auth, params: req.params ?? {}, query: req.query ?? {}, body: req.body ?? {}, alt_base_url: ALT_BASE },
      { timeoutMs: RPC_TIMEOUT_TEST_MS },
    );
  const okOf = async (service: string, op: string, auth: AuthContext, req: Parameters<Harness["call"]>[3] = {}) => {
    const r = await call(service, op, auth, req);
    if (!r.ok) throw new Error(`${service}.${op}: expected success, got ${r.error.code}: ${r.error.message}`);
    return { status: r.status, body: r.body };
  };
  let seq = 0;
  const participant = async (auth: AuthContext, displayName = "Ana's Studio") => {
    const pid = `creator_${++seq}_${randomBytes(3).toString("hex")}`;
    await okOf("ledger", "createParticipant", auth, { body: { participant_id: pid, display_name: displayName, default_split_percent: 80 } });
    return pid;
  };
  return {
    env,
    sealingKeys,
    receipts,
    logLines,
    sql,
    call,
    ok: (op, auth, req) => okOf("receipts", op, auth, req),
    err: async (op, auth, req = {}) => {
      const r = await call("receipts", op, auth, req);
      if (r.ok) throw new Error(`receipts.${op}: expected an error, got ${r.status} ${JSON.stringify(r.body)}`);
      return r.error;
    },
    participant,
    checkout: async (auth, o = {}) => {
      const pid = await participant(auth);
      const created = await okOf("payments", "createCheckoutSession", auth, {
        body: { participant_id: pid, amount: o.amount ?? 4_999, product_name: o.productName ?? "Guitar lessons" },
      });
      const id = (created.body["checkout_session"] as { id: string }).id;
      if (o.complete === false) return { id, saleTransactionId: null };
      const done = await okOf("payments", "sandboxCompleteCheckout", auth, { params: { checkout_id: id }, body: {} });
      return { id, saleTransactionId: (done.body["checkout_session"] as { sale_transaction_id: string }).sale_transaction_id };
    },
    recordSale: async (auth, amount = 2_500) => {
      const pid = await participant(auth, "Recorded Seller");
      const r = await okOf("ledger", "recordSale", auth, {
        body: { reference_id: `sale_${++seq}_${randomBytes(3).toString("hex")}`, creator_id: pid, amount, description: "Workshop ticket" },
      });
      return r.body["transaction_id"] as string;
    },
    adjustment: async (auth) => {
      const r = await rpcCall(
        await env.nats(),
        ledgerPostSubject(env.prefix),
        {
          org_id: auth.org_id,
          livemode: auth.livemode,
          kind: "adjust",
          reference_id: `adj_${++seq}`,
          postings: [{ debit: { system: "sandbox_funding" }, credit: { system: "platform_cash" }, amount: 100 }],
        },
        { timeoutMs: RPC_TIMEOUT_TEST_MS },
      );
      if (!r.ok) throw new Error(`ledger.post: ${r.error.code}`);
      return r.body["transaction_id"] as string;
    },
    close: async () => {
      await sql.end({ timeout: 5 });
      await receipts.stop();
      for (const p of spawned) p.kill("SIGTERM");
      await Promise.all(spawned.map((p) => p.exited));
      await env.cleanup();
    },
  };
}

export type Proof = schemas.ProofView;
