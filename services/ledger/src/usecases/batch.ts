/**
 * Group commit for `svc.ledger.post` (ADR 0004): postings that arrive while a batch is committing wait in a
 * short in-memory queue and go together into the next database transaction, written with one set-based
 * statement per step (claims, wallet locks, entries, wallet rows, shard deltas, results, outbox). Checks run
 * per posting in memory against the locked rows, in arrival order, so one bad posting (insufficient balance,
 * unknown wallet, idempotency conflict) is answered with its error and does not fail its neighbours; its
 * claim is deleted before COMMIT. Nobody is answered before COMMIT. If a batch fails as a whole (a bug or a
 * constraint), each of its postings is retried alone through `post`, so the failure stays with its owner.
 *
 * Posting requests with postings are batched, with their preconditions, the holds they create and the sale
 * they record (a checkout's sale holding the creator's share is one such request); requests that release
 * holds, create a hold whose release transfers to a participant, or post nothing go through `post` unchanged.
 * A hold or sale reference already taken fails the batch's write, and its requests are then posted one by one
 * through `post`, which answers that request's duplicate_reference_id.
 */
import { DomainError, type AccountRef, type PostOutcome, type PostRequest, type PostResult, type WalletAfter } from "@treasury/contracts";
import { isRetryableTxError } from "@treasury/service-kit";
import postgres, { type ReservedSql } from "postgres";
import type { Logger } from "pino";
import { BALANCE_SHARDS, NORMAL_SIDE } from "../domain/accounts.ts";
import { postRequestHash } from "../domain/canonical.ts";
import { sortableId } from "../domain/ids.ts";
import { available, InvariantViolation, planPostings, transactionPostedData, transactionsPostedData, walletStateOk, type AccountState, type ResolvedPosting } from "../domain/posting.ts";
import { ensureSystemAccount } from "../store/accounts.ts";
import { newSale } from "../store/sales.ts";
import { CURRENCY } from "./present.ts";
import {
  claimsByKey,
  lockWalletsAnyScope,
  participantWallets,
  receivables,
  writeBatch,
  type BatchEntry,
  type BatchEvent,
  type BatchHold,
  type BatchSale,
  type BatchWrite,
  type ExistingClaim,
  type LockedWallet,
} from "../store/batch.ts";
import type { Sql } from "../store/db.ts";
import { parsePostRequest, post, type PostDeps } from "./post.ts";

/** Postings per database transaction: bounds the statement sizes and the time one COMMIT keeps callers waiting. */
export const BATCH_SIZE_MAX = 256;
/** Requests waiting for a batch; beyond it callers are told to retry (service_unavailable). */
export const QUEUE_LENGTH_MAX = 10_000;
/** Queued requests looked at when forming one batch (those touching in-flight wallets are skipped). */
const BATCH_SCAN_MAX = 4 * 256;
const BATCH_TX_RETRIES = 3;
/** Wallet rows remembered between batches (see `cache`); beyond it the cache starts over. */
const WALLET_CACHE_MAX = 100_000;
/** After a batch met a reference already taken, this many following batches read their claims first. */
const CLAIM_READ_BATCHES = 64;
/** Batches in flight at once; each owns BALANCE_SHARDS / slots shards of every system account. */
export const BATCH_SLOTS_DEFAULT = 4;
const BATCH_SLOTS_MAX = 4;

interface Pending {
  /** Every account the request names (postings' sides and preconditions' wallets). */
  refs: AccountRef[];
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
  return (
    req.postings.length > 0 &&
    req.holds_release.length === 0 &&
    req.holds_create.every((h) => h.release_transfer_to_participant_id === undefined) &&
    // The batch's set-based write has no accounting date; such requests are rare (records, backdated).
    req.effective_date === undefined
  );
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
  /**
   * The last committed state of wallets this batcher wrote or locked, with the row version (xmin) it had. A
   * batch whose wallets are all here does not lock them: it computes from these rows and its write applies
   * only to rows still at these versions (the UPDATE takes the row locks and re-checks the version after any
   * concurrent writer commits). If any row moved (another path or replica wrote it), the write fails, the
   * rows are forgotten and the batch runs again with its wallets locked and read. Checks stay exact: every
   * wallet a batch reads is written (guarded) or locked in the same transaction.
   */
  private readonly cache = new Map<string, LockedWallet>();
  /** Batches that still read their claims before writing (see CLAIM_READ_BATCHES). */
  private claimReads = 0;
  private pumpScheduled = false;

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
      const refs = refsOf(req);
      this.queue.push({ refs, wallets: walletKeys(req, refs), input, req, hash: postRequestHash(req), key: keyOf(req), resolve, reject });
      this.schedulePump();
    });
  }

  /**
   * Forms batches once the event loop has delivered everything that arrived together: requests that came in
   * one read from the socket go into one batch instead of the first one starting a batch on its own.
   */
  private schedulePump(): void {
    if (this.pumpScheduled) return;
    this.pumpScheduled = true;
    setImmediate(() => {
      this.pumpScheduled = false;
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
      let readClaims = this.claimReads > 0;
      if (readClaims) this.claimReads--;
      let useCache = true;
      for (let attempt = 0; verdicts === undefined; attempt++) {
        const used = { cache: false };
        try {
          verdicts = await this.batchTx(list, systemIds, slot, readClaims, useCache, used);
        } catch (e) {
          if (used.cache && !isReferenceClaimed(e)) {
            // A remembered wallet row moved (or the optimistic write failed otherwise): lock and read them.
            useCache = false;
            attempt--;
            continue;
          }
          if (attempt >= BATCH_TX_RETRIES) throw e;
          if (isReferenceClaimed(e)) {
            // A reference was already posted (a replay) or is being claimed by another transaction: run the
            // batch again, reading the claims first (it then answers the duplicate), and keep reading them
            // for a while, since replays tend to come in runs.
            readClaims = true;
            this.claimReads = CLAIM_READ_BATCHES;
          } else if (isRetryableTxError(e)) {
            await new Promise((r) => setTimeout(r, Math.random() * 10 * 2 ** attempt));
          } else throw e;
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
    if (followers.length > 0) this.pump();
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

  /**
   * The remembered rows of all these wallets, or undefined when one is missing or is a creator wallet (a
   * creator's receivable is read under its wallet's lock, so those batches lock).
   */
  private remembered(ids: readonly string[]): LockedWallet[] | undefined {
    const rows: LockedWallet[] = [];
    for (const id of ids) {
      const w = this.cache.get(id);
      if (w === undefined || (w.account_type === "creator_earnings" && w.participant_id !== null)) return undefined;
      rows.push(w);
    }
    return rows;
  }

  /**
   * One database transaction for the batch on a reserved connection, with its statements pipelined: BEGIN
   * goes out with the statement that locks the wallets, and COMMIT with the statement that writes everything,
   * so a batch costs two round trips (plus one for participant references and one for creator receivables,
   * only when the batch has them); a batch of remembered wallets sends BEGIN, the write and COMMIT together,
   * one round trip. If the write fails, the COMMIT behind it ends the aborted transaction (PostgreSQL answers
   * ROLLBACK) and the write's error is thrown.
   */
  private async batchTx(
    list: readonly Pending[],
    systemIds: ReadonlyMap<string, string>,
    slot: number,
    readClaims: boolean,
    useCache: boolean,
    used: { cache: boolean },
  ): Promise<Map<Pending, Verdict>> {
    const conn = await this.sql.reserve();
    let open = false;
    try {
      open = true;
      // Sent with the first statement that needs it: the lock read, or (remembered wallets) the write itself.
      let sent: Promise<unknown> | undefined;
      const begin = (): Promise<unknown> => {
        if (sent === undefined) {
          sent = conn`begin`.execute();
          // Observed later (settled); this keeps a failed BEGIN from being an unhandled rejection meanwhile.
          sent.catch(() => undefined);
        }
        return sent;
      };
      const verdicts = await this.batchInTx(conn, begin, list, systemIds, slot, readClaims, useCache, used);
      open = false;
      return verdicts;
    } catch (e) {
      if (open) await conn`rollback`.catch(() => undefined);
      throw e;
    } finally {
      conn.release();
    }
  }

  private async batchInTx(
    tx: ReservedSql,
    begin: () => Promise<unknown>,
    list: readonly Pending[],
    systemIds: ReadonlyMap<string, string>,
    slot: number,
    readClaims: boolean,
    useCache: boolean,
    used: { cache: boolean },
  ): Promise<Map<Pending, Verdict>> {
    const verdicts = new Map<Pending, Verdict>();
    // Resolve participant references (identity only: wallets are locked below).
    const partKeys = new Map<string, { orgId: string; livemode: boolean; participantId: string }>();
    for (const p of list) {
      for (const ref of p.refs) {
        if ("participant_id" in ref) partKeys.set(scopeKey(p.req.org_id, p.req.livemode, ref.participant_id), { orgId: p.req.org_id, livemode: p.req.livemode, participantId: ref.participant_id });
      }
    }
    const partList = [...partKeys.values()];
    const directIds = new Set<string>();
    for (const p of list) for (const ref of p.refs) if ("wallet_id" in ref) directIds.add(ref.wallet_id.toLowerCase());

    // The wallets: remembered rows when every one is remembered (no lock; the write is guarded by their row
    // versions), else locked in id order and read. The keys already posted are read only after a reference was
    // found taken; otherwise a key already taken shows up as a unique violation of the write. Everything the
    // batch reads goes out pipelined behind BEGIN, in one round trip: the participants' wallet ids, the lock of
    // every wallet (named by id or by participant), the claims when needed, and the participants' receivables.
    const ids = [...directIds].sort();
    const remembered = useCache && !readClaims && partKeys.size === 0 ? this.remembered(ids) : undefined;
    used.cache = remembered !== undefined;
    let lockedRows: LockedWallet[];
    let existing: ExistingClaim[];
    let participantRows: Awaited<ReturnType<typeof participantWallets>> = [];
    let receivableRows: Awaited<ReturnType<typeof receivables>> = [];
    if (remembered !== undefined) {
      lockedRows = remembered;
      existing = [];
    } else {
      [, participantRows, lockedRows, existing, receivableRows] = await settled([
        begin(),
        participantWallets(tx, partList),
        lockWalletsAnyScope(tx, ids, partList),
        readClaims ? claimsByKey(tx, list.map((p) => ({ orgId: p.req.org_id, livemode: p.req.livemode, kind: p.req.kind, referenceId: p.req.reference_id }))) : Promise.resolve([] as ExistingClaim[]),
        receivables(tx, partList),
      ]);
    }
    const participants = new Map(participantRows.map((r) => [scopeKey(r.org_id, r.livemode, r.participant_id), r.wallet_id]));
    const locked = new Map(lockedRows.map((w) => [w.id, w]));
    const byKey = new Map(existing.map((e) => [`${e.org_id}\u0000${e.livemode}\u0000${e.kind}\u0000${e.reference_id}`, e]));
    const fresh: Pending[] = [];
    for (const p of list) {
      const e = byKey.get(p.key);
      if (e === undefined) fresh.push(p);
      else if (e.request_hash === p.hash) verdicts.set(p, { ok: true, outcome: { duplicate: true, result: e.result as unknown as PostResult } });
      else verdicts.set(p, { ok: false, error: new DomainError("idempotency_conflict", `reference_id ${p.req.reference_id} was used with a different request`, { extra: { existing_transaction_id: e.id } }) });
    }

    // Creators with an outstanding receivable repay it from credits (as in `post`). Those named by participant
    // were read above; creator wallets named by wallet id are read now (after their lock), if any.
    const asked = new Set(partList.map((k) => scopeKey(k.orgId, k.livemode, k.participantId)));
    const missing = [...locked.values()]
      .filter((w) => w.account_type === "creator_earnings" && w.participant_id !== null && !asked.has(scopeKey(w.org_id, w.livemode, w.participant_id)))
      .map((w) => ({ orgId: w.org_id, livemode: w.livemode, participantId: w.participant_id ?? "" }));
    if (missing.length > 0) receivableRows = [...receivableRows, ...(await receivables(tx, missing))];
    const owed = new Map(receivableRows.filter((r) => r.outstanding > 0).map((r) => [scopeKey(r.org_id, r.livemode, r.entity_id), { id: r.id, outstanding: r.outstanding }]));

    // Apply in arrival order against the in-memory state of the locked rows.
    const state = new Map<string, { balance: number; held: number }>();
    for (const w of locked.values()) state.set(w.id, { balance: w.balance, held: w.held_amount });
    const entries: BatchEntry[] = [];
    const shardDeltas = new Map<string, number>();
    const transactions: BatchWrite["transactions"][number][] = [];
    const holds: BatchHold[] = [];
    const sales: BatchSale[] = [];
    const holdEvents: BatchEvent[] = [];
    // One ledger.transaction.posted event per (org, environment) of the batch, listing its transactions.
    const posted = new Map<string, { orgId: string; livemode: boolean; items: Record<string, unknown>[] }>();
    const createdAt = new Date().toISOString();
    for (const p of fresh) {
      const applied = applyOne(p.req, { systemIds, participants, locked, state, owed });
      if (!applied.ok) {
        verdicts.set(p, applied);
        continue;
      }
      const txnId = sortableId("txn");
      for (const [id, st] of applied.wallets) state.set(id, st);
      for (const [id, d] of applied.plan.systemDeltas) shardDeltas.set(id, (shardDeltas.get(id) ?? 0) + d);
      for (const e of applied.plan.entries) entries.push({ id: sortableId("ent"), orgId: p.req.org_id, livemode: p.req.livemode, transactionId: txnId, accountId: e.account_id, entryType: e.entry_type, amount: e.amount, balanceAfter: e.balance_after });
      // Keyed by wallet id: a dictionary from the start (a plain literal would give V8 a new hidden class per id).
      const walletsAfter = Object.create(null) as Record<string, WalletAfter>;
      for (const id of applied.touched) {
        const st = state.get(id);
        if (st !== undefined) walletsAfter[id] = { balance: st.balance, held_amount: st.held, available_balance: st.balance - st.held };
      }
      const created: PostResult["holds_created"] = [];
      for (const [i, h] of applied.holds.entries()) {
        const spec = p.req.holds_create[i];
        if (spec === undefined) throw new InvariantViolation("hold without its request");
        const hold: BatchHold = {
          id: sortableId("hold"),
          orgId: p.req.org_id,
          livemode: p.req.livemode,
          walletId: h.walletId,
          participantId: h.participantId,
          amount: spec.amount,
          referenceId: spec.reference_id ?? `${p.req.kind}:${p.req.reference_id}${i > 0 ? `:${i}` : ""}`,
          reasonCode: spec.reason_code,
          description: spec.description ?? null,
          holdUntil: spec.hold_until === undefined ? null : new Date(spec.hold_until).toISOString(),
          transactionId: txnId,
          metadata: (spec.metadata ?? {}) as Record<string, unknown>,
        };
        holds.push(hold);
        created.push({ hold_id: hold.id, wallet_id: hold.walletId, participant_id: hold.participantId, amount: hold.amount, reference_id: hold.referenceId });
        holdEvents.push({
          id: sortableId("evt"),
          orgId: hold.orgId,
          livemode: hold.livemode,
          type: "hold.created",
          headers: {},
          data: {
            hold_id: hold.id,
            participant_id: hold.participantId,
            wallet_id: hold.walletId,
            amount: hold.amount,
            currency: CURRENCY,
            hold_reason_code: hold.reasonCode,
            hold_until: hold.holdUntil,
            reference_id: hold.referenceId,
            transaction_id: txnId,
          },
        });
      }
      if (p.req.sale !== undefined) {
        const s = p.req.sale;
        const holdId = s.hold_index === undefined ? null : (created[s.hold_index]?.hold_id ?? null);
        sales.push({ orgId: p.req.org_id, livemode: p.req.livemode, ...newSale(s, txnId, holdId) });
      }
      const amount = p.req.amount ?? p.req.postings.reduce((sum, x) => sum + x.amount, 0);
      const result: PostResult = {
        transaction_id: txnId,
        kind: p.req.kind,
        reference_id: p.req.reference_id,
        amount: Number.isSafeInteger(amount) ? amount : 0,
        created_at: createdAt,
        wallets: walletsAfter,
        holds_created: created,
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
      const scope = `${p.req.org_id}\u0000${p.req.livemode}`;
      let group = posted.get(scope);
      if (group === undefined) {
        group = { orgId: p.req.org_id, livemode: p.req.livemode, items: [] };
        posted.set(scope, group);
      }
      group.items.push(transactionPostedData(result, applied.plan.entries));
      verdicts.set(p, { ok: true, outcome: { duplicate: false, result } });
    }

    // Locked rows are written when they changed; remembered rows always (the guarded write is what makes
    // reading them exact, for the postings that failed on them too).
    const wallets: BatchWrite["wallets"][number][] = [];
    for (const w of lockedRows) {
      const st = state.get(w.id) ?? { balance: w.balance, held: w.held_amount };
      if (remembered !== undefined || w.balance !== st.balance || w.held_amount !== st.held) wallets.push({ id: w.id, balance: st.balance, held: st.held, xmin: w.xmin });
    }
    // Each in-flight batch slot owns its own shards of every account, so concurrent batches never wait on
    // (or deadlock over) each other's shard rows.
    const shards = [...shardDeltas.entries()].filter(([, d]) => d !== 0).map(([accountId, delta]) => ({ accountId, shard: this.shardFor(slot), delta }));
    const events: BatchEvent[] = [...posted.values()].map((g) => ({
      id: sortableId("evt"),
      orgId: g.orgId,
      livemode: g.livemode,
      type: "ledger.transaction.posted",
      headers: {},
      data: transactionsPostedData(g.items),
    }));
    events.push(...holdEvents);
    let xmin: string | null = null;
    try {
      if (transactions.length === 0 && wallets.length === 0) {
        await settled([begin(), tx`commit`.execute()]);
      } else {
        const [, written, commit] = await settled([begin(), writeBatch(tx, { transactions, entries, wallets, shards, events, holds, sales }), tx`commit`.execute()]);
        if (commit.command !== "COMMIT") throw new Error(`posting batch ended with ${commit.command}, not COMMIT`);
        xmin = written;
      }
    } catch (e) {
      for (const w of lockedRows) this.cache.delete(w.id);
      throw e;
    }
    // Committed: remember each wallet as it now is.
    if (this.cache.size + lockedRows.length > WALLET_CACHE_MAX) this.cache.clear();
    const writtenIds = new Set(wallets.map((w) => w.id));
    for (const w of lockedRows) {
      const st = state.get(w.id);
      if (writtenIds.has(w.id) && xmin !== null && st !== undefined) {
        // Updated in place: the object is this batch's own (read for it, or remembered and used by no other
        // batch in flight, since remembered rows are used only for wallets named by id, which batches in
        // flight never share).
        w.balance = st.balance;
        w.held_amount = st.held;
        w.xmin = xmin;
        this.cache.set(w.id, w);
      } else if (!writtenIds.has(w.id)) this.cache.set(w.id, w);
      else this.cache.delete(w.id);
    }
    return verdicts;
  }
}

function walletKeys(req: PostRequest, refs: readonly AccountRef[]): string[] {
  const keys: string[] = [];
  for (const ref of refs) {
    if ("wallet_id" in ref) keys.push(`w:${ref.wallet_id.toLowerCase()}`);
    else if ("participant_id" in ref) keys.push(`p:${scopeKey(req.org_id, req.livemode, ref.participant_id)}`);
  }
  return keys;
}

function refsOf(req: PostRequest): AccountRef[] {
  return [...req.postings.flatMap((p) => [p.debit, p.credit]), ...req.preconditions.map((p) => p.wallet), ...req.holds_create.map((h) => h.wallet)];
}

interface ApplyCtx {
  systemIds: ReadonlyMap<string, string>;
  participants: ReadonlyMap<string, string>;
  locked: ReadonlyMap<string, LockedWallet>;
  state: ReadonlyMap<string, { balance: number; held: number }>;
  owed: Map<string, { id: string; outstanding: number }>;
}

type Applied =
  | {
      ok: true;
      plan: ReturnType<typeof planPostings>;
      wallets: Map<string, { balance: number; held: number }>;
      touched: Set<string>;
      recovered: number;
      /** The holds of holds_create, in order: the wallet each holds on. */
      holds: { walletId: string; participantId: string | null }[];
    }
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
  const holds: { walletId: string; participantId: string | null; amount: number }[] = [];
  for (const h of req.holds_create) {
    const id = resolve(h.wallet);
    if (id instanceof DomainError) return { ok: false, error: id };
    holds.push({ walletId: id, participantId: c.locked.get(id)?.participant_id ?? null, amount: h.amount });
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
  // Holds created move held_amount before the postings apply (as in `post`).
  for (const h of holds) {
    const a = accounts.get(h.walletId);
    if (a === undefined) throw new InvariantViolation(`hold wallet ${h.walletId} not resolved`);
    accounts.set(h.walletId, { ...a, held: a.held + h.amount });
  }
  let plan = planPostings(postings, accounts);
  let recovered = 0;
  const recovery: ResolvedPosting[] = [];
  for (const id of touched) {
    const w = c.locked.get(id);
    const after = plan.wallets.get(id);
    if (w === undefined || after === undefined || w.account_type !== "creator_earnings" || w.participant_id === null) continue;
    const debt = c.owed.get(scopeKey(w.org_id, w.livemode, w.participant_id));
    // What this request makes available (earnings credited onto a new hold are not: they repay at release).
    const pre = c.state.get(id) ?? { balance: w.balance, held: w.held_amount };
    const freed = available(after) - available(pre);
    if (debt === undefined || freed <= 0) continue;
    const amount = Math.min(debt.outstanding, freed, available(after));
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
  return { ok: true, plan, wallets, touched, recovered, holds };
}

/** A reference (org, env, kind, reference_id) already taken: committed, or claimed by a concurrent transaction. */
function isReferenceClaimed(e: unknown): boolean {
  return e instanceof postgres.PostgresError && e.code === "23505" && e.constraint_name === "transactions_reference_uq";
}

type Settled<T extends readonly unknown[]> = { -readonly [K in keyof T]: Awaited<T[K]> };

/**
 * Awaits pipelined statements of one connection: all of them settle (no rejection is left unobserved when an
 * earlier one fails), then the first error in sending order is thrown.
 */
async function settled<T extends readonly unknown[]>(promises: T): Promise<Settled<T>> {
  const results = await Promise.allSettled(promises);
  for (const r of results) if (r.status === "rejected") throw r.reason;
  return results.map((r) => (r as PromiseFulfilledResult<unknown>).value) as Settled<T>;
}
