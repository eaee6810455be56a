/**
 * Shared setup of the refunds integration tests: this file's database and prefix (libs/testing), refunds built
 * in-process and the ledger and payments as real processes of their own (a service never imports another), all
 * on real PostgreSQL and NATS; RPC calls as the gateway makes them, and helpers that record real sales.
 */
import { randomBytes } from "node:crypto";
import { rpcSubject, type AuthContext, type RpcReply } from "@treasury/contracts";
import { rpcCall } from "@treasury/service-kit";
import { allowRisk, freePort, setupTestEnv, spawnService, type SpawnedService, type TestEnv, err, ok } from "@treasury/testing";
import { buildRefunds, type RefundsBuildDeps, type RefundsService } from "./service.ts";

const RPC_TIMEOUT_TEST_MS = 20_000;

export interface RefundsHarness {
  env: TestEnv;
  refunds: RefundsService;
  call(
    service: "ledger" | "refunds" | "payments",
    op: string,
    auth: AuthContext,
    req?: { params?: Record<string, string>; query?: Record<string, unknown>; body?: unknown },
  ): Promise<RpcReply>;
  /** Stops the ledger process (its requests then go unanswered), runs `whileStopped`, and starts it again. */
  withLedgerStopped(whileStopped: () => Promise<void>): Promise<void>;
  close(): Promise<void>;
}

export function authFor(orgId: string, livemode = false): AuthContext {
  return { org_id: orgId, livemode, key_id: "key_test", scopes: null, request_id: `req_${randomBytes(16).toString("hex")}` };
}

export function newOrg(): string {
  return `org_${randomBytes(8).toString("hex")}`;
}

export async function startRefunds(opts: { env?: Record<string, string>; deps?: RefundsBuildDeps } = {}): Promise<RefundsHarness> {
  const env = await setupTestEnv();
  const spawned: SpawnedService[] = [];
  const spawn = async (name: "ledger" | "payments" | "risk") => {
    const child = spawnService(name, env.env(name, { HEALTH_PORT: String(await freePort()) }));
    spawned.push(child);
    return child;
  };
  let ledger = await spawn("ledger");
  const payments = await spawn("payments");
  // The spawned ledger asks risk before a transfer, as deployed.
  const risk = await spawn("risk");
  // The reconciler runs only when a test asks (runOnce), so what a test sees is what it drove.
  const refunds = await buildRefunds(env.env("refunds", { REFUNDS_RECONCILE_INTERVAL_MS: "600000", REFUNDS_RECONCILE_GRACE_MS: "0", ...opts.env }), {
    risk: allowRisk,
    ...opts.deps,
  });
  await refunds.start();
  await Promise.all([ledger.ready, payments.ready, risk.ready]);
  return {
    env,
    refunds,
    // The test superuser's connection: refunds' own may not publish to public subjects (ADR 0011).
    call: async (service, op, auth, req = {}) =>
      rpcCall(
        await env.nats(),
        rpcSubject(env.prefix, service, op),
        { auth, params: req.params ?? {}, query: req.query ?? {}, body: req.body ?? {}, alt_base_url: "http://alt.test:8081" },
        { timeoutMs: RPC_TIMEOUT_TEST_MS },
      ),
    withLedgerStopped: async (whileStopped) => {
      ledger.kill("SIGTERM");
      await ledger.exited;
      await whileStopped();
      ledger = await spawn("ledger");
      await ledger.ready;
    },
    close: async () => {
      await refunds.stop();
      for (const c of spawned) c.kill("SIGTERM");
      await Promise.all(spawned.map((c) => c.exited));
      await env.cleanup();
    },
  };
}

/** A creator and a recorded sale (record-sale) of `amount` with `creator_percent`; answers its sale reference. */
export async function recordSale(
  h: RefundsHarness,
  auth: AuthContext,
  opts: { amount: number; creatorPercent: number; salesTax?: number; holdFunds?: boolean; creator?: string },
): Promise<{ saleReference: string; creator: string; saleTransactionId: string }> {
  const creator = opts.creator ?? `creator_${randomBytes(4).toString("hex")}`;
  const p = await h.call("ledger", "createParticipant", auth, { body: { participant_id: creator } });
  if (!p.ok && p.error.code !== "participant_already_exists") throw new Error(p.error.message);
  const saleReference = `sale_${randomBytes(6).toString("hex")}`;
  const sale = ok(
    await h.call("ledger", "recordSale", auth, {
      body: {
        reference_id: saleReference,
        creator_id: creator,
        amount: opts.amount,
        creator_percent: opts.creatorPercent,
        sales_tax: opts.salesTax ?? 0,
        hold_funds: opts.holdFunds ?? false,
      },
    }),
  );
  return { saleReference, creator, saleTransactionId: String(sale.body["transaction_id"]) };
}

/** A creator's earnings wallet: balance and held amount, as the ledger answers them. */
export async function creatorWallet(h: RefundsHarness, auth: AuthContext, creator: string): Promise<{ balance: number; held: number }> {
  const p = ok(await h.call("ledger", "getParticipant", auth, { params: { participant_id: creator } })).body["participant"] as Record<string, unknown>;
  return { balance: Number(p["ledger_balance_cents"]), held: Number(p["held_amount_cents"]) };
}

/**
 * A buyer's consumer wallet funded in sandbox, and a wallet-funded checkout paid from it: the sale reference
 * `checkout:<session id>` (a refund of it goes back to the buyer's wallet).
 */
export async function walletCheckout(
  h: RefundsHarness,
  auth: AuthContext,
  opts: { amount: number; creator: string; buyer: string },
): Promise<{ saleReference: string; walletId: string }> {
  const wallet = ok(await h.call("ledger", "createWallet", auth, { body: { owner_id: opts.buyer } })).body["wallet"] as Record<string, unknown>;
  const walletId = String(wallet["id"]);
  ok(
    await h.call("ledger", "depositToWallet", auth, {
      params: { wallet_id: walletId },
      body: { amount: opts.amount, reference_id: `fund_${randomBytes(4).toString("hex")}` },
    }),
  );
  const cs = ok(
    await h.call("payments", "createCheckoutSession", auth, {
      body: { participant_id: opts.creator, amount: opts.amount, purchase_mode: "direct_funded_wallet", customer_id: opts.buyer },
    }),
  ).body["checkout_session"] as Record<string, unknown>;
  if (cs["status"] !== "completed") throw new Error(`wallet checkout is ${String(cs["status"])}`);
  return { saleReference: String(cs["sale_reference"]), walletId };
}

export async function walletBalance(h: RefundsHarness, auth: AuthContext, walletId: string): Promise<number> {
  return Number((ok(await h.call("ledger", "getWallet", auth, { params: { wallet_id: walletId } })).body["wallet"] as Record<string, unknown>)["balance"]);
}

export { err, ok };
