/**
 * Shared setup of the receipts integration tests: this file's database and prefix (libs/testing), receipts
 * built in-process and the ledger and payments as real processes of their own (a service never imports
 * another), all on real PostgreSQL and NATS; RPC calls as the gateway makes them, and helpers that record real
 * sales (a sandbox checkout completed through payments, a recorded sale, a transaction that is no sale).
 */
import { randomBytes } from "node:crypto";
import type { JSONWebKeySet } from "jose";
import { expect } from "vitest";
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

type Call = Harness["call"];

/** RPC calls as the gateway makes them, on the test superuser's connection: receipts' own may call only the internal reads it needs (ADR 0011). */
function callerOf(env: TestEnv): Call {
  return async (service, op, auth, req = {}) =>
    rpcCall(
      await env.nats(),
      rpcSubject(env.prefix, service, op),
      { auth, params: req.params ?? {}, query: req.query ?? {}, body: req.body ?? {}, alt_base_url: ALT_BASE },
      { timeoutMs: RPC_TIMEOUT_TEST_MS },
    );
}

function okOf(call: Call) {
  return async (service: string, op: string, auth: AuthContext, req: Parameters<Call>[3] = {}) => {
    const r = await call(service, op, auth, req);
    if (!r.ok) throw new Error(`${service}.${op}: expected success, got ${r.error.code}: ${r.error.message}`);
    return { status: r.status, body: r.body };
  };
}

/** Participants, checkouts and ledger transactions, made through the real ledger and payments. */
function salesHelpers(env: TestEnv, call: Call): Pick<Harness, "participant" | "checkout" | "recordSale" | "adjustment"> {
  const ok = okOf(call);
  let seq = 0;
  const participant = async (auth: AuthContext, displayName = "Ana's Studio") => {
    const pid = `creator_${++seq}_${randomBytes(3).toString("hex")}`;
    await ok("ledger", "createParticipant", auth, { body: { participant_id: pid, display_name: displayName, default_split_percent: 80 } });
    return pid;
  };
  return {
    participant,
    checkout: async (auth, o = {}) => {
      const pid = await participant(auth);
      const created = await ok("payments", "createCheckoutSession", auth, {
        body: { participant_id: pid, amount: o.amount ?? 4_999, product_name: o.productName ?? "Guitar lessons" },
      });
      const id = (created.body["checkout_session"] as { id: string }).id;
      if (o.complete === false) return { id, saleTransactionId: null };
      const done = await ok("payments", "sandboxCompleteCheckout", auth, { params: { checkout_id: id }, body: {} });
      return { id, saleTransactionId: (done.body["checkout_session"] as { sale_transaction_id: string }).sale_transaction_id };
    },
    recordSale: async (auth, amount = 2_500) => {
      const pid = await participant(auth, "Recorded Seller");
      const r = await ok("ledger", "recordSale", auth, {
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
  };
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
  const call = callerOf(env);
  return {
    env,
    sealingKeys,
    receipts,
    logLines,
    sql,
    call,
    ok: (op, auth, req) => okOf(call)("receipts", op, auth, req),
    err: async (op, auth, req = {}) => {
      const r = await call("receipts", op, auth, req);
      if (r.ok) throw new Error(`receipts.${op}: expected an error, got ${r.status} ${JSON.stringify(r.body)}`);
      return r.error;
    },
    ...salesHelpers(env, call),
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

export type Verified = {
  valid: boolean;
  checks: { receipt_hash: boolean; chain: boolean; service_signature: boolean; counterparty_signatures: Array<{ key_id: string; valid: boolean }> };
  problems: string[];
};

/** What the proof tests do again and again, on the harness `harness()` answers (started in a beforeAll). */
export function proofHelpers(harness: () => Harness) {
  const receiptOf = async (auth: AuthContext): Promise<{ receiptId: string; saleTransactionId: string }> => {
    const cs = await harness().checkout(auth);
    const r = await harness().ok("generateReceipt", auth, { body: { checkout_id: cs.id } });
    return { receiptId: r.body["receipt_id"] as string, saleTransactionId: cs.saleTransactionId ?? "" };
  };
  const proofOf = async (auth: AuthContext, receiptId: string): Promise<Proof> =>
    (await harness().ok("getReceiptProof", auth, { params: { receipt_id: receiptId } })).body["proof"] as Proof;
  const verify = async (auth: AuthContext, body: Record<string, unknown>): Promise<Verified> =>
    (await harness().ok("verifyReceiptProof", auth, { body })).body as Verified;
  return {
    receiptOf,
    proofOf,
    verify,
    jwks: async (): Promise<JSONWebKeySet> => {
      const r = await harness().ok("getReceiptJwks", authFor(""), {});
      return { keys: r.body["keys"] as JSONWebKeySet["keys"] };
    },
    /** Runs `fn` with the append-only guard of receipts.proofs lifted, as someone with the database's superuser could. */
    bypassingGuard: async (fn: (sql: TestEnv["adminSql"]) => Promise<unknown>): Promise<void> => {
      await harness().env.adminSql.begin(async (tx) => {
        await tx`alter table receipts.proofs disable trigger proofs_append_only`;
        await fn(tx as unknown as TestEnv["adminSql"]);
        await tx`alter table receipts.proofs enable trigger proofs_append_only`;
      });
    },
    /** A new org's chain of `n` proofs (a receipt's first), verified whole. */
    chainOf: async (n: number): Promise<{ auth: AuthContext; receiptId: string; txns: string[] }> => {
      const h = harness();
      const auth = authFor(newOrg());
      const { receiptId, saleTransactionId } = await receiptOf(auth);
      await proofOf(auth, receiptId);
      const txns = [saleTransactionId];
      for (let i = 1; i < n; i++) {
        const t = await h.adjustment(auth);
        await h.ok("getTransactionReceiptProof", auth, { params: { transaction_id: t } });
        txns.push(t);
      }
      expect((await verify(auth, { receipt_id: receiptId })).valid).toBe(true);
      return { auth, receiptId, txns };
    },
  };
}
