/**
 * In-memory fakes of the use cases' ports (ports.ts) for the unit tests: no PostgreSQL, no NATS. One FakeLedger
 * holds the rows; `deps()` answers LedgerDeps whose stores read and write them, and whose poster records every
 * request and answers it the way the posting engine does in outline: wallets named by id move (never below zero),
 * holds are created and released, and a key posted again with the same request answers the first result.
 * Stores a test does not set up throw when called, so a use case reaching for one fails its test.
 */
import { cents, DomainError, PostRequest, type PostOutcome, type PostResult, type Tenant } from "@treasury/contracts";
import { NORMAL_SIDE, type SystemAccountType } from "../domain/accounts.ts";
import type { LedgerDeps } from "./deps.ts";
import type { Derived, PostHooks, TxStore } from "./ports.ts";
import type { EntryRow, HoldRow, ParticipantWithBalance, ReserveRow, SaleRow, SystemAccount, TransactionRow, WalletRow } from "./rows.ts";

export const TENANT: Tenant = { orgId: "org_fake", livemode: false };
const EPOCH = new Date("2026-01-01T00:00:00Z");

export function walletRow(over: Partial<WalletRow> & { id: string }): WalletRow {
  return {
    org_id: TENANT.orgId,
    livemode: TENANT.livemode,
    account_type: "consumer_credit",
    normal_side: "credit",
    balance: cents(0),
    held_amount: cents(0),
    owner_id: `owner-${over.id}`,
    owner_type: "user",
    participant_id: null,
    name: over.id,
    status: "active",
    redeemable: true,
    transferable: true,
    topup_supported: true,
    payout_supported: false,
    metadata: {},
    created_at: EPOCH,
    ...over,
  };
}

export function holdRow(over: Partial<HoldRow> & { id: string; wallet_id: string }): HoldRow {
  return {
    org_id: TENANT.orgId,
    livemode: TENANT.livemode,
    participant_id: null,
    amount: cents(100),
    reference_id: over.id,
    hold_reason_code: "temporary_hold",
    hold_reason_description: null,
    hold_until: null,
    release_transfer_to_participant_id: null,
    status: "held",
    transaction_id: `txn_of_${over.id}`,
    metadata: {},
    created_at: EPOCH,
    release_id: null,
    released_at: null,
    release_transaction_id: null,
    release_transfer_executed: null,
    auto_release: false,
    ...over,
  };
}

export function participantRow(over: Partial<ParticipantWithBalance> & { participant_id: string; wallet_id: string }): ParticipantWithBalance {
  return {
    account_id: over.wallet_id,
    user_id: null,
    display_name: null,
    email: null,
    default_split_bps: null,
    tax_info: null,
    payout_preferences: null,
    metadata: {},
    request_hash: "hash",
    created_at: EPOCH,
    balance: cents(0),
    held_amount: cents(0),
    owed: cents(0),
    ...over,
  };
}

export function transactionRow(over: Partial<TransactionRow> & { id: string }): TransactionRow {
  return {
    kind: "sale",
    reference_id: over.id,
    status: "posted",
    amount: cents(0),
    reversed_amount: cents(0),
    reversal_of: null,
    description: null,
    metadata: {},
    result: {},
    created_at: EPOCH,
    ...over,
  };
}

export function saleRow(over: Partial<SaleRow> & { sale_reference: string; transaction_id: string }): SaleRow {
  return {
    participant_id: null,
    gross: cents(0),
    creator_amount: cents(0),
    sales_tax: cents(0),
    refunded_amount: cents(0),
    creator_refunded: cents(0),
    platform_refunded: cents(0),
    reversed: false,
    hold_id: null,
    ...over,
  };
}

/** A store the test did not set up: any call fails the test. */
function unused<T extends object>(name: string): T {
  return new Proxy({} as T, {
    get: (_, method) => () => Promise.reject(new Error(`${name}.${String(method)} is not faked in this test`)),
  });
}

export class FakeLedger {
  readonly wallets = new Map<string, WalletRow>();
  readonly participants = new Map<string, ParticipantWithBalance>();
  readonly holds = new Map<string, HoldRow>();
  /** Participants' reserves, by participant id. */
  readonly reserves = new Map<string, ReserveRow>();
  /** By sale reference. */
  readonly sales = new Map<string, SaleRow>();
  readonly transactions = new Map<string, TransactionRow>();
  /** A transaction's entries, by transaction id. */
  readonly entries = new Map<string, EntryRow[]>();
  readonly systemAccounts = new Map<string, SystemAccount>();
  /** Every store method called, in order (`wallets.findById`, …): what a use case read. */
  readonly calls: string[] = [];
  /** Every request the poster was given, with its hooks and what its extension derived. */
  readonly posted: { request: PostRequest; hooks: PostHooks | undefined; derived: Derived | undefined }[] = [];
  /** The transaction's writes an extension made (`sales.updateRemainder`, …), with their arguments. */
  readonly txWrites: { op: string; args: unknown[] }[] = [];
  /** Refuses the next post with this error (the engine's refusal: insufficient_balance, wallet_not_active…). */
  refuseNext: DomainError | undefined;
  now = new Date("2026-03-01T12:00:00Z");
  private readonly firstResults = new Map<string, { json: string; result: PostResult }>();
  private seq = 0;

  deps(): LedgerDeps {
    return {
      risk: { check: async () => ({ decision: "allow", evaluationId: "feval_fake", failedOpen: false }) },
      wallets: {
        findById: async (_t, id) => this.read("wallets.findById", this.wallets.get(id)),
        findCreator: async (_t, p) =>
          this.read(
            "wallets.findCreator",
            [...this.wallets.values()].find((w) => w.participant_id === p),
          ),
        findConsumer: async (_t, o) =>
          this.read(
            "wallets.findConsumer",
            [...this.wallets.values()].find((w) => w.owner_id === o && w.account_type === "consumer_credit"),
          ),
        insert: async (_t, w) => this.insertWallet(w),
        list: async () => this.read("wallets.list", { rows: [...this.wallets.values()], total: this.wallets.size }),
        entries: unused<LedgerDeps["wallets"]>("wallets").entries,
      },
      participants: {
        find: async (_t, id) => this.read("participants.find", this.participants.get(id)),
        list: async (_t, limit, offset) => {
          const rows = [...this.participants.values()].slice(offset, offset + limit);
          return this.read("participants.list", { rows, total: this.participants.size });
        },
        findMany: async (_t, ids) =>
          this.read(
            "participants.findMany",
            ids.flatMap((id) => this.participants.get(id) ?? []),
          ),
        exists: async (_t, id) => this.read("participants.exists", this.participants.has(id)),
      },
      holds: this.holdStore(),
      accounts: {
        ensureSystem: async (_t, type, entityId = "") => this.read("accounts.ensureSystem", this.systemAccount(type, entityId)),
        kinds: async (_t, ids) =>
          this.read(
            "accounts.kinds",
            ids.flatMap((id) => this.kindOf(id)),
          ),
      },
      sales: {
        find: async (_t, ref) => this.read("sales.find", this.sales.get(ref)),
        participantOf: async (_t, txn) =>
          this.read("sales.participantOf", [...this.sales.values()].find((s) => s.transaction_id === txn)?.participant_id ?? undefined),
      },
      transactions: {
        find: async (_t, id) => this.read("transactions.find", this.transactions.get(id)),
        latestReversal: async (_t, id) => this.read("transactions.latestReversal", this.latestReversal(id)),
        entries: async (_t, id) => this.read("transactions.entries", this.entries.get(id) ?? []),
      },
      bills: unused("bills"),
      listing: unused("listing"),
      records: unused("records"),
      bankLines: unused("bankLines"),
      reconciliation: unused("reconciliation"),
      sandboxClocks: unused("sandboxClocks"),
      reserves: this.reserveStore(),
      transaction: (fn) => fn(this.txStore()),
      poster: { post: (input, hooks) => this.post(input, hooks) },
      parser: unused("parser"),
      now: () => this.now,
    };
  }

  private reserveStore(): LedgerDeps["reserves"] {
    return {
      find: async (_t, ids) =>
        this.read(
          "reserves.find",
          [...this.reserves.values()].filter((r) => ids.includes(r.participant_id)),
        ),
      put: async (_t, r) => {
        const row: ReserveRow = {
          participant_id: r.participantId,
          reserve_type: r.type,
          percent_bps: r.percentBps,
          days: r.days,
          amount_cents: r.amountCents === null ? null : cents(r.amountCents),
          updated_at: this.now,
        };
        this.reserves.set(r.participantId, row);
        return row;
      },
    };
  }

  private holdStore(): LedgerDeps["holds"] {
    return {
      find: async (_t, id) => this.read("holds.find", this.holds.get(id)),
      list: async (_t, f) => {
        const rows = [...this.holds.values()].filter((h) => f.status === undefined || h.status === f.status);
        return this.read("holds.list", { rows, total: rows.length });
      },
      summary: async () => this.read("holds.summary", { total_held: cents(0), total_ready: cents(0), count: this.holds.size, by_reason: {} }),
      activeOfWallets: async (_t, ids) =>
        this.read(
          "holds.activeOfWallets",
          [...this.holds.values()].filter((h) => ids.includes(h.wallet_id) && h.status === "held"),
        ),
      dueForRelease: async (realNow, advanced, limit) => {
        const due = (h: HoldRow): boolean =>
          h.auto_release &&
          h.status === "held" &&
          h.hold_until !== null &&
          h.hold_until.getTime() <= realNow.getTime() + (h.livemode ? 0 : (advanced.get(h.org_id) ?? 0) * 1000);
        const rows = [...this.holds.values()].filter(due).slice(0, limit);
        return this.read(
          "holds.dueForRelease",
          rows.map((h) => ({ id: h.id, org_id: h.org_id, livemode: h.livemode })),
        );
      },
    };
  }

  /** What an extension may do inside the posting transaction (locks are no-ops: one test runs one request at a time). */
  txStore(): TxStore {
    const write = (op: string, ...args: unknown[]): void => void this.txWrites.push({ op, args });
    return {
      wallets: { insert: async (_t, w) => this.insertWallet(w) },
      participants: {
        insert: async (_t, p) => {
          if (this.participants.has(p.participantId)) return undefined;
          const row = participantRow({ participant_id: p.participantId, wallet_id: p.walletId, request_hash: p.requestHash, display_name: p.displayName });
          this.participants.set(p.participantId, row);
          return row;
        },
        find: async (_t, id) => this.participants.get(id),
      },
      sales: {
        lockByTransaction: async (_t, txn) => [...this.sales.values()].find((s) => s.transaction_id === txn),
        lockByReference: async (_t, ref) => this.sales.get(ref),
        updateRemainder: async (_t, ref, r) => {
          write("sales.updateRemainder", ref, r);
          const s = this.sales.get(ref);
          if (s !== undefined)
            this.sales.set(ref, {
              ...s,
              refunded_amount: cents(r.refunded),
              creator_refunded: cents(r.creatorRefunded),
              platform_refunded: cents(r.platformRefunded),
              reversed: r.reversed,
            });
        },
      },
      transactions: {
        lock: async (_t, id) => this.transactions.get(id),
        latestReversal: async (_t, id) => this.latestReversal(id),
        markReversal: async (_t, reversalId, originalId, reversedAmount, fully) => {
          write("transactions.markReversal", reversalId, originalId, reversedAmount, fully);
          const o = this.transactions.get(originalId);
          if (o !== undefined) this.transactions.set(originalId, { ...o, reversed_amount: cents(reversedAmount), status: fully ? "reversed" : "posted" });
        },
      },
      bills: unused("tx.bills"),
      imports: unused("tx.imports"),
    };
  }

  private read<T>(name: string, value: T): T {
    this.calls.push(name);
    return value;
  }

  private insertWallet(w: Parameters<LedgerDeps["wallets"]["insert"]>[1]): WalletRow | undefined {
    const taken = [...this.wallets.values()].some((x) =>
      w.type === "creator_earnings" ? x.participant_id === w.participantId : x.account_type === "consumer_credit" && x.owner_id === w.ownerId,
    );
    if (taken) return undefined;
    const row = walletRow({
      id: w.id ?? `wallet-${++this.seq}`,
      account_type: w.type,
      normal_side: NORMAL_SIDE[w.type],
      owner_id: w.ownerId,
      owner_type: w.ownerType,
      participant_id: w.participantId,
      name: w.name,
      ...w.flags,
      metadata: w.metadata,
    });
    this.wallets.set(row.id, row);
    return row;
  }

  private systemAccount(type: SystemAccountType, entityId: string): SystemAccount {
    const key = `${type}:${entityId}`;
    let a = this.systemAccounts.get(key);
    if (a === undefined) {
      a = { id: `sys-${key}`, type, normal: NORMAL_SIDE[type] };
      this.systemAccounts.set(key, a);
    }
    return a;
  }

  private kindOf(id: string): ReturnType<LedgerDeps["accounts"]["kinds"]> extends Promise<infer R> ? R : never {
    const w = this.wallets.get(id);
    if (w !== undefined) return [{ id, normal_side: w.normal_side, is_wallet: true, account_type: w.account_type }];
    const a = [...this.systemAccounts.values()].find((x) => x.id === id);
    return a === undefined ? [] : [{ id, normal_side: a.normal, is_wallet: false, account_type: a.type }];
  }

  private latestReversal(id: string): TransactionRow | undefined {
    return [...this.transactions.values()].filter((t) => t.reversal_of === id).at(-1);
  }

  private async post(input: unknown, hooks: PostHooks | undefined): Promise<PostOutcome> {
    const request = PostRequest.parse(input);
    const key = `${request.kind}\u0000${request.reference_id}`;
    const json = JSON.stringify([input, hooks?.hashInput ?? null]);
    const first = this.firstResults.get(key);
    if (first !== undefined) {
      if (first.json !== json) throw new DomainError("idempotency_conflict", `reference_id ${request.reference_id} was used with a different request`);
      return { duplicate: true, result: first.result };
    }
    const refused = this.refuseNext;
    this.refuseNext = undefined;
    if (refused !== undefined) throw refused;
    const transactionId = `txn_${++this.seq}`;
    const derived = hooks?.derive === undefined ? undefined : await hooks.derive(this.txStore(), { transactionId, tenant: TENANT });
    this.posted.push({ request, hooks, derived });
    const result = this.apply(request, transactionId, derived, hooks);
    this.firstResults.set(key, { json, result });
    return { duplicate: false, result };
  }

  /** Moves wallets named by id, creates and releases holds: the outline of what the engine does. */
  private apply(req: PostRequest, transactionId: string, derived: Derived | undefined, hooks?: PostHooks): PostResult {
    const touched = new Map<string, WalletRow>();
    const move = (id: string, delta: number): void => {
      const w = touched.get(id) ?? this.wallets.get(id);
      if (w === undefined) return;
      if (w.balance + delta < w.held_amount) throw new DomainError("insufficient_balance", "Insufficient available balance", { extra: { wallet_id: id } });
      touched.set(id, { ...w, balance: cents(w.balance + delta) });
    };
    for (const p of req.postings) {
      if ("wallet_id" in p.debit) move(p.debit.wallet_id, -p.amount);
      if ("wallet_id" in p.credit) move(p.credit.wallet_id, p.amount);
    }
    for (const w of touched.values()) this.wallets.set(w.id, w);
    const created = req.holds_create.map((h, i) => {
      const walletId = "wallet_id" in h.wallet ? h.wallet.wallet_id : "";
      const row = holdRow({
        id: `hold_${transactionId}_${i}`,
        wallet_id: walletId,
        amount: cents(h.amount),
        transaction_id: transactionId,
        hold_until: h.hold_until === undefined ? null : new Date(h.hold_until),
        hold_reason_code: h.reason_code,
        auto_release: hooks?.autoRelease?.includes(i) === true,
      });
      this.holds.set(row.id, row);
      return { hold_id: row.id, wallet_id: walletId, participant_id: null, amount: row.amount, reference_id: row.reference_id };
    });
    const released = req.holds_release.map((r) => {
      const h = this.holds.get(r.hold_id);
      if (h === undefined) throw new DomainError("hold_not_found", `Hold ${r.hold_id} not found`);
      if (h.status !== "held") throw new DomainError("hold_already_released", `Hold ${h.id} was already released`, { extra: { hold_id: h.id } });
      this.holds.set(h.id, {
        ...h,
        status: "released",
        release_id: `rel_${transactionId}`,
        release_transaction_id: transactionId,
        release_transfer_executed: r.transfer_executed,
      });
      return { hold_id: h.id, release_id: `rel_${transactionId}`, wallet_id: h.wallet_id, amount: h.amount, transfer_executed: r.transfer_executed };
    });
    const wallets = Object.fromEntries(
      [...touched.values()].map((w) => [w.id, { balance: w.balance, held_amount: w.held_amount, available_balance: w.balance - w.held_amount }]),
    );
    const amount = derived?.amount ?? req.amount ?? req.postings.reduce((s, p) => s + p.amount, 0);
    return {
      transaction_id: transactionId,
      kind: req.kind,
      reference_id: req.reference_id,
      amount: cents(amount),
      created_at: this.now.toISOString(),
      wallets,
      holds_created: created,
      holds_released: released,
      extra: { ...(req.result_extra ?? {}), ...(derived?.extra ?? {}) },
    };
  }
}

/** The DomainError a use case refused with (any other outcome fails the test). */
export async function refusalOf(p: Promise<unknown>): Promise<DomainError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof DomainError) return e;
    throw e;
  }
  throw new Error("expected a refusal, got an answer");
}

/** The code of the DomainError a use case refused with, or undefined when it answered. */
export function codeOf(p: Promise<unknown>): Promise<string | undefined> {
  return p.then(
    () => undefined,
    (e: unknown) => (e instanceof DomainError ? e.code : String(e)),
  );
}
