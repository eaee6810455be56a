/**
 * Group commit for `svc.ledger.post` (ADR 0004): postings that arrive while a batch is committing wait in a
 * short in-memory queue and go together into the next database transaction, written with one set-based
 * statement per step (claims, wallet locks, entries, wallet rows, shard deltas, results, outbox). Checks run
 * per posting in memory against the locked rows, in arrival order, so one bad posting (insufficient balance,
 * unknown wallet, idempotency conflict) is answered with its error and does not fail its neighbours; its
 * claim is deleted before COMMIT. Nobody is answered before COMMIT. If a batch fails as a whole (a bug or a
 * constraint), each of its postings is retried alone through `post`, so the failure stays with its owner.
 *
 * Only plain posting requests (postings and preconditions) are batched; requests that create or release
 * holds or record a sale go through `post` unchanged.
 */
import { DomainError, newId, type AccountRef, type PostOutcome, type PostRequest, type PostResult, type WalletAfter } from "@treasury/contracts";
import { isRetryableTxError, withTx } from "@treasury/service-kit";
import postgres from "postgres";
import type { Logger } from "pino";
import { BALANCE_SHARDS, NORMAL_SIDE } from "../domain/accounts.ts";
import { requestHash } from "../domain/canonical.ts";
import { sortableIds } from "../domain/ids.ts";
import { available, InvariantViolation, planPostings, transactionPostedData, walletStateOk, type AccountState, type PlannedEntry, type ResolvedPosting } from "../domain/posting.ts";
import { ensureSystemAccount } from "../store/accounts.ts";
import {
  claimsAndLocks,
  existingClaims,
  lockWalletsAnyScope,
  participantWallets,
  receivables,
  writeBatch,
  type BatchEntry,
  type BatchEvent,
  type BatchWrite,
  type ExistingClaim,
  type LockedWallet,
} from "../store/batch.ts";
import type { Sql, Tx } from "../store/db.ts";
import { parsePostRequest, post, type PostDeps } from "./post.ts";

/** Postings per database transaction: bounds the statement sizes and the time one COMMIT keeps callers waiting. */
export const BATCH_SIZE_MAX = 256;
/** Requests waiting for a batch; beyond it callers are told to retry (service_unavailable). */
export const QUEUE_LENGTH_MAX = 10_000;
/** Queued requests looked at when forming one batch (those touching in-flight wallets are skipped). */
const BATCH_SCAN_MAX = 4 * 256;
const BATCH_TX_RETRIES = 3;
/** Batches in flight at once; each owns BALANCE_SHARDS / slots shards of every system account. */
export const BATCH_SLOTS_DEFAULT = 4;
const BATCH_SLOTS_MAX = 4;

interface Pending {
  /** The wallets it names (`w:<id>` or `p:<org>/<env>/<participant>`): batches in flight never share one. */
  wallets: string[];
  input: unknown;
  req: PostRequest;
  hash: string;
  key: string;
  resolve: (o: PostOutcome) => void;
  reject: (e: unknown) => void;
}

type Verdict = { ok: true; outcome: PostOutcome } | { ok: false; error: DomainError };

export function batchable(req: PostRequest): boolean {
  return req.postings.length > 0 && req.holds_create.length === 0 && req.holds_release.length === 0 && req.sale === undefined;
}

function keyOf(req: PostRequest): string {
  return `${req.org_id}\u0000${req.livemode}\u0000${req.kind}\u0000${req.reference_id}`;
}

function scopeKey(orgId: string, livemode: boolean, id: string): string {
  return `${orgId}\u0000${livemode}\u0000${id}`;
}

export class PostBatcher {
  private queue: Pending[] = [];
  /** Wallets (by reference) of the batches in flight, with how many batches hold each. */
  private readonly inFlight = new Map<string, number>();
  /** Batches in flight: one prepares while another commits. */
  private active = 0;
  private readonly freeSlots: number[];
  private readonly sql: Sql;
  private readonly deps: PostDeps;
  private readonly log: Logger | undefined;

  constructor(sql: Sql, deps: PostDeps = {}, log?: Logger, opts: { slots?: number } = {}) {
    this.sql = sql;
    this.deps = deps;
    this.log = log;
    const slots = Math.max(1, Math.min(BATCH_SLOTS_MAX, opts.slots ?? BATCH_SLOTS_DEFAULT));
    this.freeSlots = Array.from({ length: slots }, (_, i) => i);
  }

  /** A shard of slot `slot`'s share (BALANCE_SHARDS / slots rows per account), or the test's pinned shard. */
  private shardFor(slot: number): number {
    if (this.deps.pickShard !== undefined) return this.deps.pickShard();
    const slots = this.freeSlots.length + this.active;
    const per = Math.floor(BALANCE_SHARDS / slots);
    return slot * per + Math.floor(Math.random() * per);
  }

  /** Posts one request: batched when it is a plain posting request, else through `post`. */
  submit(input: unknown): Promise<PostOutcome> {
    let req: PostRequest;
    try {
      req = parsePostRequest(input);
    } catch (e) {
      return Promise.reject(e);
    }
    if (!batchable(req)) return post(this.sql, input, this.deps);
    if (this.queue.length >= QUEUE_LENGTH_MAX) return Promise.reject(new DomainError("service_unavailable", "Posting queue full; retry with the same reference_id"));
    return new Promise<PostOutcome>((resolve, reject) => {
      this.queue.push({ wallets: walletKeys(req), input, req, hash: requestHash(req), key: keyOf(req), resolve, reject });
      this.pump();
    });
  }

  /** Starts a batch in every free slot while requests wait. */
  private pump(): void {
    while (this.queue.length > 0 && this.freeSlots.length > 0) {
      const batch = this.takeBatch();
      if (batch.length === 0) return;
      const slot = this.freeSlots.pop() ?? 0;
      const keys = new Set(batch.flatMap((p) => p.wallets));
      for (const k of keys) this.inFlight.set(k, (this.inFlight.get(k) ?? 0) + 1);
      this.active++;
      void this.runBatch(batch, slot).finally(() => {
        for (const k of keys) {
          const n = (this.inFlight.get(k) ?? 1) - 1;
          if (n === 0) this.inFlight.delete(k);
          else this.inFlight.set(k, n);
        }
        this.active--;
        this.freeSlots.push(slot);
        this.pump();
      });
    }
  }

  /**
   * The next batch: queued requests in arrival order, skipping those that touch a wallet an in-flight batch
   * holds (they wait for a later batch instead of waiting on its row locks inside a transaction). Within one
   * batch requests may share wallets: they are applied in order in memory.
   */
  private takeBatch(): Pending[] {
    const batch: Pending[] = [];
    const rest: Pending[] = [];
    const scanned = Math.min(this.queue.length, BATCH_SCAN_MAX);
    for (let i = 0; i < scanned; i++) {
      const p = this.queue[i];
      if (p === undefined) continue;
      if (batch.length < BATCH_SIZE_MAX && !p.wallets.some((k) => this.inFlight.has(k))) batch.push(p);
      else rest.push(p);
    }
    this.queue = [...rest, ...this.queue.slice(scanned)];
    return batch;
  }

  private async runBatch(batch: Pending[], slot: number): Promise<void> {
    // The same key twice in one batch: the first leads, the others answer from its outcome after COMMIT.
    const leaders = new Map<string, Pending>();
    const followers: Pending[] = [];
    for (const p of batch) {
      if (leaders.has(p.key)) followers.push(p);
      else leaders.set(p.key, p);
    }
    const list = [...leaders.values()];
    let verdicts: Map<Pending, Verdict> | undefined;
    try {
      const systemIds = await this.systemAccounts(list);
      for (let attempt = 0; verdicts === undefined; attempt++) {
        try {
          verdicts = await withTx(this.sql, (tx) => this.batchTx(tx, list, systemIds, slot), { retries: BATCH_TX_RETRIES });
        } catch (e) {
          // Another transaction claimed one of these references meanwhile: re-run, it is now a duplicate.
          const raced = e instanceof postgres.PostgresError && e.code === "23505" && e.constraint_name === "transactions_reference_uq";
          if (!raced || attempt >= BATCH_TX_RETRIES) throw e;
        }
      }
    } catch (e) {
      // The batch failed as a whole: each posting alone, so the failure stays with the one that causes it.
      this.log?.warn({ err: e, size: list.length, retryable: isRetryableTxError(e) }, "posting batch failed; posting its requests one by one");
      for (const p of [...list, ...followers]) post(this.sql, p.input, this.deps).then(p.resolve, p.reject);
      return;
    }
    for (const [p, v] of verdicts) {
      if (v.ok) p.resolve(v.outcome);
      else p.reject(v.error);
    }
    for (const f of followers) {
      const leader = leaders.get(f.key);
      const v = leader === undefined ? undefined : verdicts.get(leader);
      if (v === undefined || !v.ok) {
        // The leader failed, so nothing holds the key: this one goes in a later batch on its own merits.
        this.queue.push(f);
      } else if (f.hash !== leader?.hash) {
        f.reject(new DomainError("idempotency_conflict", `reference_id ${f.req.reference_id} was used with a different request`, { extra: { existing_transaction_id: v.outcome.result.transaction_id } }));
      } else f.resolve({ duplicate: true, result: v.outcome.result });
    }
  }

  /** System accounts exist before the transaction (created in statements of their own, then cached). */
  private async systemAccounts(list: readonly Pending[]): Promise<Map<string, string>> {
    const ids = new Map<string, string>();
    for (const p of list) {
      for (const posting of p.req.postings) {
        for (const ref of [posting.debit, posting.credit]) {
          if (!("system" in ref)) continue;
          const k = scopeKey(p.req.org_id, p.req.livemode, `${ref.system}:${ref.entity_id ?? ""}`);
          if (ids.has(k)) continue;
          const acct = await ensureSystemAccount(this.sql, { orgId: p.req.org_id, livemode: p.req.livemode }, ref.system, ref.entity_id ?? "");
          ids.set(k, acct.id);
        }
      }
    }
    return ids;
  }

  private async batchTx(tx: Tx, list: readonly Pending[], systemIds: ReadonlyMap<string, string>, slot: number): Promise<Map<Pending, Verdict>> {
    const verdicts = new Map<Pending, Verdict>();
    // Resolve participant references (identity only: wallets are locked below).
    const partKeys = new Map<string, { orgId: string; livemode: boolean; participantId: string }>();
    for (const p of list) {
      for (const ref of refsOf(p.req)) {
        if ("participant_id" in ref) partKeys.set(scopeKey(p.req.org_id, p.req.livemode, ref.participant_id), { orgId: p.req.org_id, livemode: p.req.livemode, participantId: ref.participant_id });
      }
    }
    const participants = new Map((await participantWallets(tx, [...partKeys.values()])).map((r) => [scopeKey(r.org_id, r.livemode, r.participant_id), r.wallet_id]));
    const walletIds = new Set<string>();
    for (const p of list) {
      for (const ref of refsOf(p.req)) {
        if ("wallet_id" in ref) walletIds.add(ref.wallet_id.toLowerCase());
        else if ("participant_id" in ref) {
          const id = participants.get(scopeKey(p.req.org_id, p.req.livemode, ref.participant_id));
          if (id !== undefined) walletIds.add(id);
        }
      }
    }

    // Keys already posted (committed) and the wallets, locked: one round trip when the batch is one
    // (org, env, kind), as it nearly always is.
    const groups = new Set(list.map((p) => `${p.req.org_id}\u0000${p.req.livemode}\u0000${p.req.kind}`));
    const first = list[0];
    let existing: ExistingClaim[];
    let lockedRows: LockedWallet[];
    if (groups.size === 1 && first !== undefined) {
      ({ existing, wallets: lockedRows } = await claimsAndLocks(tx, { orgId: first.req.org_id, livemode: first.req.livemode, kind: first.req.kind, refs: list.map((p) => p.req.reference_id) }, [...walletIds].sort()));
    } else {
      existing = await existingClaims(tx, list.map((p) => ({ orgId: p.req.org_id, livemode: p.req.livemode, kind: p.req.kind, referenceId: p.req.reference_id })));
      lockedRows = await lockWalletsAnyScope(tx, [...walletIds].sort());
    }
    const locked = new Map(lockedRows.map((w) => [w.id, w]));
    const byKey = new Map(existing.map((e) => [`${e.org_id}\u0000${e.livemode}\u0000${e.kind}\u0000${e.reference_id}`, e]));
    const fresh: Pending[] = [];
    for (const p of list) {
      const e = byKey.get(p.key);
      if (e === undefined) fresh.push(p);
      else if (e.request_hash === p.hash) verdicts.set(p, { ok: true, outcome: { duplicate: true, result: e.result as unknown as PostResult } });
      else verdicts.set(p, { ok: false, error: new DomainError("idempotency_conflict", `reference_id ${p.req.reference_id} was used with a different request`, { extra: { existing_transaction_id: e.id } }) });
    }

    // Creators with an outstanding receivable repay it from credits (as in `post`).
    const creatorKeys = [...locked.values()].filter((w) => w.account_type === "creator_earnings" && w.participant_id !== null).map((w) => ({ orgId: w.org_id, livemode: w.livemode, participantId: w.participant_id ?? "" }));
    const owed = new Map((await receivables(tx, creatorKeys)).filter((r) => r.outstanding > 0).map((r) => [scopeKey(r.org_id, r.livemode, r.entity_id), { id: r.id, outstanding: r.outstanding }]));

    // Apply in arrival order against the in-memory state of the locked rows.
    const state = new Map<string, { balance: number; held: number }>();
    for (const w of locked.values()) state.set(w.id, { balance: w.balance, held: w.held_amount });
    const entries: BatchEntry[] = [];
    const shardDeltas = new Map<string, number>();
    const transactions: BatchWrite["transactions"][number][] = [];
    const events: BatchEvent[] = [];
    const createdAt = new Date().toISOString();
    for (const p of fresh) {
      const applied = applyOne(p.req, { systemIds, participants, locked, state, owed });
      if (!applied.ok) {
        verdicts.set(p, applied);
        continue;
      }
      const txnId = sortableIds("txn", 1)[0] ?? newId("txn");
      for (const [id, st] of applied.wallets) state.set(id, st);
      for (const [id, d] of applied.plan.systemDeltas) shardDeltas.set(id, (shardDeltas.get(id) ?? 0) + d);
      const entryIds = sortableIds("ent", applied.plan.entries.length);
      for (const [k, e] of applied.plan.entries.entries()) entries.push({ id: entryIds[k] ?? newId("ent"), orgId: p.req.org_id, livemode: p.req.livemode, transactionId: txnId, accountId: e.account_id, entryType: e.entry_type, amount: e.amount, balanceAfter: e.balance_after });
      const walletsAfter: Record<string, WalletAfter> = {};
      for (const id of applied.touched) {
        const st = state.get(id);
        if (st !== undefined) walletsAfter[id] = { balance: st.balance, held_amount: st.held, available_balance: st.balance - st.held };
      }
      const amount = p.req.amount ?? p.req.postings.reduce((sum, x) => sum + x.amount, 0);
      const result: PostResult = {
        transaction_id: txnId,
        kind: p.req.kind,
        reference_id: p.req.reference_id,
        amount: Number.isSafeInteger(amount) ? amount : 0,
        created_at: createdAt,
        wallets: walletsAfter,
        holds_created: [],
        holds_released: [],
        extra: { ...(p.req.result_extra ?? {}), ...(applied.recovered > 0 ? { receivable_recovered: applied.recovered } : {}) },
      };
      transactions.push({
        id: txnId,
        orgId: p.req.org_id,
        livemode: p.req.livemode,
        kind: p.req.kind,
        referenceId: p.req.reference_id,
        requestHash: p.hash,
        amount: result.amount,
        description: p.req.description ?? null,
        metadata: p.req.metadata ?? {},
        result: result as unknown as Record<string, unknown>,
      });
      events.push(postedEvent(p.req, result, applied.plan.entries));
      verdicts.set(p, { ok: true, outcome: { duplicate: false, result } });
    }

    const wallets = [...state.entries()]
      .filter(([id, st]) => {
        const w = locked.get(id);
        return w !== undefined && (w.balance !== st.balance || w.held_amount !== st.held);
      })
      .map(([id, st]) => ({ id, balance: st.balance, held: st.held }));
    // Each in-flight batch slot owns its own shards of every account, so concurrent batches never wait on
    // (or deadlock over) each other's shard rows.
    const shards = [...shardDeltas.entries()].filter(([, d]) => d !== 0).map(([accountId, delta]) => ({ accountId, shard: this.shardFor(slot), delta }));
    await writeBatch(tx, { transactions, entries, wallets, shards, events });
    return verdicts;
  }
}

function walletKeys(req: PostRequest): string[] {
  const keys: string[] = [];
  for (const ref of refsOf(req)) {
    if ("wallet_id" in ref) keys.push(`w:${ref.wallet_id.toLowerCase()}`);
    else if ("participant_id" in ref) keys.push(`p:${scopeKey(req.org_id, req.livemode, ref.participant_id)}`);
  }
  return keys;
}

function refsOf(req: PostRequest): AccountRef[] {
  return [...req.postings.flatMap((p) => [p.debit, p.credit]), ...req.preconditions.map((p) => p.wallet)];
}

interface ApplyCtx {
  systemIds: ReadonlyMap<string, string>;
  participants: ReadonlyMap<string, string>;
  locked: ReadonlyMap<string, LockedWallet>;
  state: ReadonlyMap<string, { balance: number; held: number }>;
  owed: Map<string, { id: string; outstanding: number }>;
}

type Applied =
  | { ok: true; plan: ReturnType<typeof planPostings>; wallets: Map<string, { balance: number; held: number }>; touched: Set<string>; recovered: number }
  | { ok: false; error: DomainError };

/** One request against the batch's current state; nothing changes unless it is accepted. */
function applyOne(req: PostRequest, c: ApplyCtx): Applied {
  const accounts = new Map<string, AccountState>();
  const touched = new Set<string>();
  const resolve = (ref: AccountRef): string | DomainError => {
    if ("system" in ref) {
      const id = c.systemIds.get(scopeKey(req.org_id, req.livemode, `${ref.system}:${ref.entity_id ?? ""}`));
      if (id === undefined) throw new InvariantViolation(`system account ${ref.system} not ensured`);
      accounts.set(id, { id, normal: NORMAL_SIDE[ref.system], isWallet: false, balance: 0, held: 0 });
      return id;
    }
    const id = "wallet_id" in ref ? ref.wallet_id.toLowerCase() : c.participants.get(scopeKey(req.org_id, req.livemode, ref.participant_id));
    const w = id === undefined ? undefined : c.locked.get(id);
    if (w === undefined || w.org_id !== req.org_id || w.livemode !== req.livemode) {
      return "wallet_id" in ref
        ? new DomainError("wallet_not_found", `Wallet ${ref.wallet_id} not found`)
        : new DomainError("participant_not_found", `Participant ${ref.participant_id} not found`);
    }
    const s = c.state.get(w.id) ?? { balance: w.balance, held: w.held_amount };
    accounts.set(w.id, { id: w.id, normal: w.normal_side, isWallet: true, balance: s.balance, held: s.held });
    touched.add(w.id);
    return w.id;
  };
  const postings: ResolvedPosting[] = [];
  for (const [i, p] of req.postings.entries()) {
    const debit = resolve(p.debit);
    if (debit instanceof DomainError) return { ok: false, error: debit };
    const credit = resolve(p.credit);
    if (credit instanceof DomainError) return { ok: false, error: credit };
    if (debit === credit) {
      return { ok: false, error: new DomainError("validation_error", "A posting may not debit and credit the same account", { details: [{ path: `postings.${i}`, message: "debit and credit name the same account" }] }) };
    }
    postings.push({ debit, credit, amount: p.amount });
  }
  for (const id of touched) {
    const w = c.locked.get(id);
    if (w !== undefined && w.status !== "active") return { ok: false, error: new DomainError("wallet_not_active", `Wallet ${id} is ${w.status}`, { extra: { wallet_id: id } }) };
  }
  for (const pre of req.preconditions) {
    const id = resolve(pre.wallet);
    if (id instanceof DomainError) return { ok: false, error: id };
    const a = accounts.get(id);
    if (a === undefined || available(a) < pre.available_gte) {
      return { ok: false, error: new DomainError("insufficient_balance", "Insufficient available balance", { extra: { wallet_id: id, available_balance: a === undefined ? 0 : available(a), required: pre.available_gte } }) };
    }
  }
  let plan = planPostings(postings, accounts);
  let recovered = 0;
  const recovery: ResolvedPosting[] = [];
  for (const id of touched) {
    const w = c.locked.get(id);
    const after = plan.wallets.get(id);
    const before = accounts.get(id);
    if (w === undefined || after === undefined || before === undefined || w.account_type !== "creator_earnings" || w.participant_id === null) continue;
    const debt = c.owed.get(scopeKey(w.org_id, w.livemode, w.participant_id));
    const credited = after.balance - before.balance;
    if (debt === undefined || credited <= 0) continue;
    const amount = Math.min(debt.outstanding, credited, available(after));
    if (amount <= 0) continue;
    accounts.set(debt.id, { id: debt.id, normal: "debit", isWallet: false, balance: 0, held: 0 });
    recovery.push({ debit: id, credit: debt.id, amount });
  }
  if (recovery.length > 0) plan = planPostings([...postings, ...recovery], accounts);
  const wallets = new Map<string, { balance: number; held: number }>();
  for (const id of touched) {
    const s = plan.wallets.get(id) ?? accounts.get(id);
    if (s === undefined) continue;
    if (!walletStateOk(s)) {
      const a = accounts.get(id);
      return { ok: false, error: new DomainError("insufficient_balance", "Insufficient available balance", { extra: { wallet_id: id, available_balance: a === undefined ? 0 : available(a) } }) };
    }
    wallets.set(id, { balance: s.balance, held: s.held });
  }
  // Accepted: the debts it repaid are smaller for the postings after it.
  for (const r of recovery) {
    const w = c.locked.get(r.debit);
    const debt = w?.participant_id == null || w === undefined ? undefined : c.owed.get(scopeKey(w.org_id, w.livemode, w.participant_id));
    if (debt !== undefined) debt.outstanding -= r.amount;
    recovered += r.amount;
  }
  return { ok: true, plan, wallets, touched, recovered };
}

function postedEvent(req: PostRequest, result: PostResult, entries: readonly PlannedEntry[]): BatchEvent {
  return {
    id: sortableIds("evt", 1)[0] ?? newId("evt"),
    orgId: req.org_id,
    livemode: req.livemode,
    type: "ledger.transaction.posted",
    headers: {},
    data: transactionPostedData(result, entries),
  };
}
