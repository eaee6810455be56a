/**
 * The posting engine's entry: the one way money moves in the ledger. Every money-moving use case and the
 * internal `svc.ledger.post` RPC call `post` (the PostPort of usecases/ports.ts). Requests wait in a short
 * in-memory queue and go, in arrival order, into database transactions run by commit.ts: plain posting requests
 * together (group commit, ADR 0004), the others (hold releases, in-process extensions, requests posting nothing)
 * as a batch of one.
 *
 * Batches in flight never share a wallet: a request touching a wallet an in-flight batch holds waits for a
 * later batch instead of waiting on its row locks inside a transaction. Each in-flight batch owns its own
 * slot of every system account's balance shards, so concurrent batches never wait on (or deadlock over) each
 * other's shard rows. If a batch fails as a whole (a bug, a constraint), each of its requests runs again
 * alone, so the failure stays with the request that causes it.
 */
import { DomainError, type PostOutcome, type PostRequest } from "@treasury/contracts";
import { captureContext, eventHeaders, isRetryableTxError } from "@treasury/service-kit";
import type { Logger } from "pino";
import { BALANCE_SHARDS } from "../domain/accounts.ts";
import { postRequestHash, postRequestHashWithoutDate, requestHash } from "../domain/canonical.ts";
import { ensureSystemAccount } from "../store/accounts.ts";
import type { Sql } from "../store/db.ts";
import type { PostHooks, PostPort } from "../usecases/ports.ts";
import { commitBatch } from "./commit.ts";
import { keyOf, refsOf, scopeKey, walletKeys, type Pending, type Verdict } from "./pending.ts";
import { batchable, parsePostRequest } from "./request.ts";
import { isReferenceClaimed, referenceTakenError } from "./statements.ts";
import { WalletCache } from "./wallet-cache.ts";

/** Postings per database transaction: bounds the statement sizes and the time one COMMIT keeps callers waiting. */
export const BATCH_SIZE_MAX = 256;
/** Requests waiting for a batch; beyond it callers are told to retry (service_unavailable). */
export const QUEUE_LENGTH_MAX = 10_000;
/** Queued requests looked at when forming one batch (those touching in-flight wallets are skipped). */
const BATCH_SCAN_MAX = 4 * 256;
/** Serialization failures and deadlocks are retried this many times before the error surfaces. */
const TX_RETRIES = 5;
/** Wallet rows remembered between batches (see WalletCache); beyond it the cache starts over. */
const WALLET_CACHE_MAX = 100_000;
/** After a batch met a reference already taken, this many following batches read their claims first. */
const CLAIM_READ_BATCHES = 64;
/** Batches in flight at once; each owns BALANCE_SHARDS / slots shards of every system account. */
export const BATCH_SLOTS_DEFAULT = 4;
const BATCH_SLOTS_MAX = 4;

export interface PosterOptions {
  log?: Logger;
  slots?: number;
  /** Which balance shard a system-account delta lands on (tests pin it); by default a random one of the batch's slot. */
  pickShard?: () => number;
  /** False runs every request as a batch of one (its claim first), the path requests with extensions take. */
  groupCommit?: boolean;
  /** Told the size of every batch formed (requests in its transaction): the service's metrics. */
  batchSizes?: { observe(size: number): void };
  /** Seconds an org's sandbox runs ahead of real time (its test clock): a sandbox posting answers created_at on it. */
  sandboxAdvance?: (orgId: string) => number;
}

const noAdvance = (): number => 0;

export class Poster implements PostPort {
  private queue: Pending[] = [];
  /** Wallets (by reference) of the batches in flight, with how many batches hold each. */
  private readonly inFlight = new Map<string, number>();
  private active = 0;
  private readonly freeSlots: number[];
  private readonly slots: number;
  private readonly cache = new WalletCache(WALLET_CACHE_MAX);
  /** Batches that still read their claims before writing (see CLAIM_READ_BATCHES). */
  private claimReads = 0;
  private pumpScheduled = false;

  constructor(
    private readonly sql: Sql,
    private readonly opts: PosterOptions = {},
  ) {
    this.slots = Math.max(1, Math.min(BATCH_SLOTS_MAX, opts.slots ?? BATCH_SLOTS_DEFAULT));
    this.freeSlots = Array.from({ length: this.slots }, (_, i) => i);
  }

  post(input: unknown, hooks?: PostHooks): Promise<PostOutcome> {
    let req: PostRequest;
    let hashed: PostRequest;
    try {
      // An extension's or a refund's postings are computed in the transaction: the request may carry none.
      req = parsePostRequest(input, hooks?.derive !== undefined || hooks?.refund !== undefined);
      hashed = hooks?.hashAs === undefined ? req : parsePostRequest(hooks.hashAs, true);
    } catch (e) {
      return Promise.reject(e);
    }
    if (this.queue.length >= QUEUE_LENGTH_MAX)
      return Promise.reject(new DomainError("service_unavailable", "Posting queue full; retry with the same reference_id"));
    return new Promise<PostOutcome>((resolve, reject) => {
      const refs = refsOf(req);
      const plan = hooks?.refund;
      this.queue.push({
        req,
        hash: hooks?.hashInput === undefined ? postRequestHash(hashed) : requestHash(hooks.hashInput),
        hashWithoutDate: hooks?.hashInput === undefined ? postRequestHashWithoutDate(hashed) : undefined,
        key: keyOf(req),
        refs,
        // A refund holds its sale (and its creator's wallet): two batches never refund one sale at once.
        wallets:
          plan === undefined
            ? walletKeys(req, refs)
            : [
                ...walletKeys(req, refs),
                `s:${scopeKey(plan.orgId, plan.livemode, plan.saleReference)}`,
                ...(plan.creatorWalletId === null ? [] : [`w:${plan.creatorWalletId}`]),
              ],
        hooks,
        refund: plan,
        solo: this.opts.groupCommit === false || !batchable(req, hooks),
        headers: eventHeaders(),
        inCallerContext: captureContext(),
        resolve,
        reject,
      });
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
   * holds. A request that runs alone is taken only as a batch of its own. Within one batch requests may share
   * wallets: they are applied in order in memory.
   */
  private takeBatch(): Pending[] {
    const batch: Pending[] = [];
    const rest: Pending[] = [];
    const scanned = Math.min(this.queue.length, BATCH_SCAN_MAX);
    let i = 0;
    for (; i < scanned; i++) {
      const p = this.queue[i];
      if (p === undefined) continue;
      const free = !p.wallets.some((k) => this.inFlight.has(k));
      if (p.solo && free && batch.length === 0) {
        batch.push(p);
        i++;
        break;
      }
      if (!p.solo && free && batch.length < BATCH_SIZE_MAX) batch.push(p);
      else rest.push(p);
    }
    this.queue = [...rest, ...this.queue.slice(i)];
    return batch;
  }

  /** A shard of slot `slot`'s share (BALANCE_SHARDS / slots rows per account), or the pinned one. */
  private shardOf(slot: number): () => number {
    const pinned = this.opts.pickShard;
    if (pinned !== undefined) return pinned;
    const per = Math.floor(BALANCE_SHARDS / this.slots);
    return () => slot * per + Math.floor(Math.random() * per);
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
    this.opts.batchSizes?.observe(list.length);
    let verdicts: Map<Pending, Verdict>;
    try {
      verdicts = await this.commitWithRetries(list, slot);
    } catch (e) {
      this.failed(list, followers, e);
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
        f.reject(
          new DomainError("idempotency_conflict", `reference_id ${f.req.reference_id} was used with a different request`, {
            extra: { existing_transaction_id: v.outcome.result.transaction_id },
          }),
        );
      } else f.resolve({ duplicate: true, result: v.outcome.result });
    }
    if (followers.length > 0) this.pump();
  }

  private async commitWithRetries(list: readonly Pending[], slot: number): Promise<Map<Pending, Verdict>> {
    const systemIds = await this.systemAccounts(list);
    let readClaims = this.claimReads > 0;
    if (readClaims) this.claimReads--;
    let useCache = true;
    for (let attempt = 0; ; attempt++) {
      const used = { cache: false };
      try {
        return await commitBatch(
          this.sql,
          list,
          systemIds,
          this.cache,
          { readClaims, useCache, shard: this.shardOf(slot), sandboxAdvance: this.opts.sandboxAdvance ?? noAdvance },
          used,
        );
      } catch (e) {
        if (used.cache && !isReferenceClaimed(e)) {
          // A remembered wallet row moved (or the optimistic write failed otherwise): lock and read them.
          useCache = false;
          attempt--;
          continue;
        }
        if (attempt >= TX_RETRIES) throw e;
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
  }

  /**
   * A batch that failed as a whole: each request runs again alone, so the failure stays with its owner. A
   * request that already ran alone gets the error (a reference of a hold or sale already taken is its own
   * client error).
   */
  private failed(list: readonly Pending[], followers: readonly Pending[], e: unknown): void {
    const all = [...list, ...followers];
    const only = all.length === 1 ? all[0] : undefined;
    if (only?.solo === true) {
      only.reject(referenceTakenError(e) ?? e);
      return;
    }
    this.opts.log?.warn({ err: e, size: list.length, retryable: isRetryableTxError(e) }, "posting batch failed; posting its requests one by one");
    for (const p of all) p.solo = true;
    this.queue.unshift(...all);
    this.schedulePump();
  }

  /** System accounts exist before the transaction (created in statements of their own, then cached). */
  private async systemAccounts(list: readonly Pending[]): Promise<Map<string, string>> {
    const ids = new Map<string, string>();
    for (const p of list) {
      for (const ref of p.refs) {
        if (!("system" in ref)) continue;
        const k = scopeKey(p.req.org_id, p.req.livemode, `${ref.system}:${ref.entity_id ?? ""}`);
        if (ids.has(k)) continue;
        const acct = await ensureSystemAccount(this.sql, { orgId: p.req.org_id, livemode: p.req.livemode }, ref.system, ref.entity_id ?? "");
        ids.set(k, acct.id);
      }
    }
    return ids;
  }
}
