/**
 * A stand-in ledger over real NATS that keeps creator wallets' books (a service may not import another; the
 * end-to-end tests run the real ledger): `svc.ledger.post` of a payout takes its amount out of the wallet once per
 * reference, and the internal reads payouts makes (getParticipant, participantBalances, listWalletEntries, getSandboxClock) answer
 * from those books.
 */
import { connect } from "@nats-io/transport-node";
import { internalOperation, schemas, type PostRequestInput, type RpcRequest } from "@treasury/contracts";
import { createLogger, errorReply, RpcServer } from "@treasury/service-kit";
import { natsOptions, type TestEnv } from "@treasury/testing";
import type { WalletEntry } from "../src/usecases/ports.ts";

interface Wallet {
  id: string;
  participantId: string;
  balance: number;
  /** Oldest first. */
  entries: WalletEntry[];
}

export interface LedgerBooks {
  /** Every payout post received (a repeated reference included), in order. */
  payoutPosts: PostRequestInput[];
  /** One transaction on a participant's wallet: signed amounts (+ credit, − debit). */
  record(participantId: string, kind: string, referenceId: string, amounts: readonly number[], at?: Date): string;
  balance(participantId: string): number;
  close(): Promise<void>;
}

export async function startLedgerBooks(env: TestEnv): Promise<LedgerBooks> {
  const nc = await connect(natsOptions(env.natsUrl));
  const server = new RpcServer({
    nc,
    prefix: env.prefix,
    service: "ledger",
    log: createLogger({ service: "ledger-books", level: "silent" }),
    concurrencyMax: 16,
  });
  const wallets = new Map<string, Wallet>();
  const done = new Map<string, Record<string, unknown>>();
  const payoutPosts: PostRequestInput[] = [];
  const walletOf = (participantId: string): Wallet => {
    let w = wallets.get(participantId);
    if (w === undefined) {
      w = { id: `00000000-0000-4000-8000-${String(wallets.size + 1).padStart(12, "0")}`, participantId, balance: 0, entries: [] };
      wallets.set(participantId, w);
    }
    return w;
  };
  const record = (participantId: string, kind: string, referenceId: string, amounts: readonly number[], at = new Date()): string => {
    const w = walletOf(participantId);
    const transactionId = `txn_${kind}_${referenceId.replace(/[^a-z0-9]/gi, "")}`;
    for (const a of amounts) {
      w.balance += a;
      const e: WalletEntry = {
        entry_id: `ent_${w.entries.length + 1}`,
        entry_type: a >= 0 ? "credit" : "debit",
        amount: Math.abs(a),
        transaction_id: transactionId,
        reference_id: referenceId,
        transaction_type: kind,
        description: null,
        balance_after: w.balance,
        created_at: at.toISOString(),
      };
      w.entries.push(e);
    }
    return transactionId;
  };
  server.handleRaw("post", async (payload) => {
    const req = payload as PostRequestInput;
    const pid = String((req.metadata as { participant_id?: string } | undefined)?.participant_id);
    payoutPosts.push(req);
    const key = `${req.kind}|${req.reference_id}`;
    const w = walletOf(pid);
    const amount = req.amount ?? 0;
    let body = done.get(key);
    if (body === undefined) {
      if (amount > w.balance) return errorReply("insufficient_balance", "Insufficient available balance");
      const transactionId = record(pid, req.kind, req.reference_id, [-amount]);
      body = { transaction_id: transactionId, kind: req.kind, reference_id: req.reference_id, amount, created_at: new Date().toISOString() };
      body["wallets"] = { [w.id]: { balance: w.balance, held_amount: 0, available_balance: w.balance } };
      Object.assign(body, { holds_created: [], holds_released: [], extra: {}, duplicate: false });
      done.set(key, body);
    }
    return { ok: true, status: 200, body };
  });
  server.handle(internalOperation("getParticipant"), async (req: RpcRequest) => {
    const w = walletOf(req.params["participant_id"] ?? "");
    return { body: { participant: { id: w.participantId, wallet_id: w.id, available_balance_cents: w.balance } } };
  });
  server.handleRaw(schemas.PARTICIPANT_BALANCES_OPERATION, async (payload) => {
    const ids = (payload as { participant_ids: string[] }).participant_ids;
    const participants = ids.map((id) => walletOf(id)).map((w) => ({ id: w.participantId, wallet_id: w.id, available_balance_cents: w.balance }));
    return { ok: true, status: 200, body: { participants } };
  });
  // The clock as payouts' own copy has it (the tests advance that copy, as the ledger's event would).
  server.handle(internalOperation("getSandboxClock"), async (req: RpcRequest) => {
    const [row] = await env.adminSql<{ s: string }[]>`select advanced_seconds::text as s from payouts.sandbox_clocks where org_id = ${req.auth.org_id}`;
    const advanced = Number(row?.s ?? 0);
    return { body: { clock: { now: new Date(Date.now() + advanced * 1000).toISOString(), advanced_by_seconds: advanced } } };
  });
  server.handle(internalOperation("listWalletEntries"), async (req: RpcRequest) => {
    const w = [...wallets.values()].find((x) => x.id === req.params["wallet_id"]);
    const all = [...(w?.entries ?? [])].reverse();
    const limit = Number(req.query["limit"] ?? 25);
    const offset = Number(req.query["offset"] ?? 0);
    return { body: { entries: all.slice(offset, offset + limit), total: all.length, limit, offset } };
  });
  server.start();
  await nc.flush();
  return {
    payoutPosts,
    record,
    balance: (participantId) => walletOf(participantId).balance,
    close: async () => {
      await server.drain();
      await nc.close();
    },
  };
}
