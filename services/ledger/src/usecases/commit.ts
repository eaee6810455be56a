/**
 * The posting transaction: one database transaction for a batch of posting requests, the only code that writes
 * entries. A single post is a batch of one. Every request is checked by the one rule engine
 * (domain/engine.ts) against the rows read and locked here, in arrival order, so a rejected request is answered
 * with its error and writes nothing while its neighbours commit. Nobody is answered before COMMIT.
 *
 * Steps, all on one reserved connection with statements pipelined:
 * 1. A request that runs alone (see batchable) takes its idempotency claim first and then runs its in-process
 *    extension, which may lock rows of its own (a sale, a bill) and derive postings from them.
 * 2. One round trip reads and locks everything the batch names: participants' wallet ids, every wallet in
 *    ascending id order, the holds being released, keys already posted (only after a reference was found
 *    taken), creators' receivables, and release-transfer participants.
 * 3. The engine applies each request to the in-memory state of those rows.
 * 4. One statement writes everything (store/batch.ts), with COMMIT pipelined behind it. A batch request's
 *    idempotency claim is its transaction row in that statement: a key already taken fails the statement
 *    (transactions_reference_uq) and the caller runs the batch again reading the claims first.
 */
import {
  cents,
  DomainError,
  newId,
  type AccountRef,
  type Cents,
  type PostOutcome,
  type PostRequest,
  type PostResult,
  type SystemAccountType,
  type WalletAfter,
} from "@treasury/contracts";
import { refundParts, type SaleState } from "@treasury/money-rules";
import postgres, { type ReservedSql } from "postgres";
import type { Side } from "../domain/accounts.ts";
import { applyPosting, type Applied, type DerivedChanges, type HoldState, type LedgerView, type WalletState } from "../domain/engine.ts";
import { sortableId } from "../domain/ids.ts";
import { refundPostings, type RefundPlan } from "../domain/refund.ts";
import { InvariantViolation, transactionPostedData, transactionsPostedData } from "../domain/posting.ts";
import { accountKinds, type Scope } from "../store/accounts.ts";
import {
  claimsByKey,
  lockHoldsAnyScope,
  lockSalesAnyScope,
  lockWalletsAnyScope,
  participantWallets,
  receivables,
  writeBatch,
  type BatchEntry,
  type BatchEvent,
  type BatchHold,
  type BatchRelease,
  type BatchSale,
  type BatchWrite,
  type ExistingClaim,
  type LockedSale,
  type LockedWallet,
} from "../store/batch.ts";
import type { Sql } from "../store/db.ts";
import { findHoldsByIds, lockHolds, type HoldRow } from "../store/holds.ts";
import { newSale } from "../store/sales.ts";
import { claimTransaction } from "../store/transactions.ts";
import type { Derived, PostHooks } from "./post-request.ts";
import { CURRENCY } from "./present.ts";

/** A request waiting for (or in) a batch. */
export interface Pending {
  req: PostRequest;
  hash: string;
  /** A dated request's hash as stored before the date was hashed (postRequestHashWithoutDate): a replay matches either. */
  hashWithoutDate?: string | undefined;
  /** (org, environment, kind, reference_id): the idempotency key. */
  key: string;
  /** Every account the request names. */
  refs: AccountRef[];
  /** The wallets it names (`w:<id>` or `p:<org>/<env>/<participant>`): batches in flight never share one. */
  wallets: string[];
  hooks: PostHooks | undefined;
  /** A refund's facts about its sale (its remainder is read locked in the transaction). */
  refund: RefundPlan | undefined;
  /** Runs as a batch of one that takes its claim first (see batchable). */
  solo: boolean;
  /** The caller's request id and trace context, stored on the events the request causes. */
  headers: Record<string, string>;
  /** Runs a function in the caller's context (an extension's own events and logs then carry its trace). */
  inCallerContext: <T>(fn: () => T) => T;
  resolve: (o: PostOutcome) => void;
  reject: (e: unknown) => void;
}

export type Verdict = { ok: true; outcome: PostOutcome } | { ok: false; error: DomainError };

export function scopeKey(orgId: string, livemode: boolean, id: string): string {
  return `${orgId}\u0000${livemode}\u0000${id}`;
}

export function keyOf(req: PostRequest): string {
  return `${req.org_id}\u0000${req.livemode}\u0000${req.kind}\u0000${req.reference_id}`;
}

/**
 * The last committed state of wallets this process wrote or locked, with the row version (xmin) it had. A batch
 * whose wallets are all here does not lock them: it computes from these rows and its write applies only to rows
 * still at these versions (the UPDATE takes the row locks and re-checks the version after any concurrent
 * writer commits). If any row moved (another path or replica wrote it), the write fails, the rows are
 * forgotten and the batch runs again with its wallets locked and read. Checks stay exact: every wallet a batch
 * reads is written (guarded) or locked in the same transaction.
 */
export class WalletCache {
  private readonly rows = new Map<string, LockedWallet>();
  constructor(private readonly sizeMax: number) {}

  /**
   * The remembered rows of all these wallets, or undefined when one is missing or is a creator wallet (a
   * creator's receivable is read under its wallet's lock, so those batches lock).
   */
  all(ids: readonly string[]): LockedWallet[] | undefined {
    const out: LockedWallet[] = [];
    for (const id of ids) {
      const w = this.rows.get(id);
      if (w === undefined || (w.account_type === "creator_earnings" && w.participant_id !== null)) return undefined;
      out.push(w);
    }
    return out;
  }

  forget(rows: readonly LockedWallet[]): void {
    for (const w of rows) this.rows.delete(w.id);
  }

  /** After COMMIT: each row as the batch left it (written rows at the new version). */
  remember(rows: readonly LockedWallet[], written: ReadonlyMap<string, { balance: number; held: number }>, xmin: string | null): void {
    if (this.rows.size + rows.length > this.sizeMax) this.rows.clear();
    for (const w of rows) {
      const st = written.get(w.id);
      if (st === undefined) this.rows.set(w.id, w);
      else if (xmin === null) this.rows.delete(w.id);
      else {
        // Updated in place: the object is this batch's own (read for it, or remembered and used by no other
        // batch in flight, since remembered rows are used only for wallets named by id, which batches in
        // flight never share).
        w.balance = cents(st.balance);
        w.held_amount = cents(st.held);
        w.xmin = xmin;
        this.rows.set(w.id, w);
      }
    }
  }
}

export interface CommitOptions {
  /** Read the keys already posted before writing (after a reference was found taken). */
  readClaims: boolean;
  /** May use remembered wallet rows instead of locking them. */
  useCache: boolean;
  /** The balance shard a system account's delta lands on. */
  shard: () => number;
}

/** What the read step found, for every request of the batch. */
interface Rows {
  participants: Map<string, string>;
  locked: LockedWallet[];
  holds: Map<string, LockedHold>;
  /** Sales the batch refunds, locked, by scopeKey(org, env, sale reference). */
  sales: Map<string, LockedSale>;
  claims: ExistingClaim[];
  owed: Map<string, { id: string; outstanding: number }>;
  existingParticipants: Set<string>;
  /** Normal sides of system accounts an extension named by id. */
  systemNormals: Map<string, Side>;
}

type LockedHold = Pick<HoldRow, "id" | "wallet_id" | "participant_id" | "amount" | "status" | "release_id">;

/** A request that runs alone: its claim, and what its extension derived. */
interface SoloClaim {
  transactionId: string;
  createdAt: string;
  derived: Derived | undefined;
}

/**
 * Runs one batch's transaction. Answers a verdict per request (followers of a key are the caller's concern).
 * `used.cache` tells the caller whether remembered rows were used, so a failed write can be re-run with locks.
 */
export async function commitBatch(
  sql: Sql,
  list: readonly Pending[],
  systemIds: ReadonlyMap<string, string>,
  cache: WalletCache,
  opts: CommitOptions,
  used: { cache: boolean },
): Promise<Map<Pending, Verdict>> {
  const conn = await sql.reserve();
  let open = false;
  try {
    open = true;
    // Sent with the first statement that needs it.
    let sent: Promise<unknown> | undefined;
    const begin = (): Promise<unknown> => {
      if (sent === undefined) {
        // Every statement of a posting transaction reaches rows by key. On a small, constantly updated accounts
        // table the cached generic plan of the wallet update prefers a sequential scan, whose cost grows with
        // the row versions awaiting pruning (measured: 0.9 ms of a 7 ms write); an index probe costs 0.02 ms.
        sent = Promise.all([conn`begin`.execute(), conn`set local enable_seqscan = off`.execute()]);
        // Observed later (settled); this keeps a failed BEGIN from being an unhandled rejection meanwhile.
        sent.catch(() => undefined);
      }
      return sent;
    };
    const verdicts = await inTransaction(conn, begin, list, systemIds, cache, opts, used);
    open = false;
    return verdicts;
  } catch (e) {
    if (open) await conn`rollback`.catch(() => undefined);
    throw e;
  } finally {
    conn.release();
  }
}

async function inTransaction(
  conn: ReservedSql,
  begin: () => Promise<unknown>,
  list: readonly Pending[],
  systemIds: ReadonlyMap<string, string>,
  cache: WalletCache,
  opts: CommitOptions,
  used: { cache: boolean },
): Promise<Map<Pending, Verdict>> {
  const verdicts = new Map<Pending, Verdict>();
  const alone = list.length === 1 && list[0]?.solo === true ? list[0] : undefined;
  let solo: SoloClaim | undefined;
  if (alone !== undefined) {
    const claimed = await claimFirst(conn, begin, alone);
    if (!claimed.ok) {
      verdicts.set(alone, claimed.verdict);
      await conn`rollback`;
      return verdicts;
    }
    solo = claimed.solo;
  }

  const rows = await readRows(conn, begin, list, solo, cache, opts, used);
  const byKey = new Map(rows.claims.map((e) => [`${e.org_id}\u0000${e.livemode}\u0000${e.kind}\u0000${e.reference_id}`, e]));
  const fresh: Pending[] = [];
  for (const p of list) {
    const e = byKey.get(p.key);
    if (e === undefined) fresh.push(p);
    else verdicts.set(p, replayVerdict(p, e.id, e.request_hash, e.result));
  }

  const batch = new BatchBuilder(rows, systemIds, solo);
  for (const p of fresh) {
    const v = batch.apply(p);
    verdicts.set(p, v);
    if (!v.ok && solo !== undefined) {
      // A request that ran alone wrote its claim (and its extension's rows): none of it may stay.
      await conn`rollback`;
      return verdicts;
    }
  }
  if (!opts.readClaims) await answerReplays(conn, begin, fresh, verdicts);

  const write = batch.write(used.cache, opts.shard);
  let xmin: string | null = null;
  try {
    if (write.transactions.length === 0 && write.wallets.length === 0) {
      await settled([begin(), conn`commit`.execute()]);
    } else {
      const [, written, commit] = await settled([begin(), writeBatch(conn, write), conn`commit`.execute()]);
      if (commit.command !== "COMMIT") throw new Error(`posting batch ended with ${commit.command}, not COMMIT`);
      xmin = written;
    }
  } catch (e) {
    cache.forget(rows.locked);
    throw e;
  }
  cache.remember(rows.locked, new Map(write.wallets.map((w) => [w.id, w])), xmin);
  return verdicts;
}

/**
 * A refused request may be the replay of one already posted (a withdrawal replayed after the balance moved, a
 * refund replayed after the sale was refunded in full): it gets the first result, not the refusal. Claims are read
 * only for refused requests (rarely any): the accepted ones find a taken key at the write.
 */
async function answerReplays(conn: ReservedSql, begin: () => Promise<unknown>, fresh: readonly Pending[], verdicts: Map<Pending, Verdict>): Promise<void> {
  const refused = fresh.filter((p) => verdicts.get(p)?.ok === false);
  if (refused.length === 0) return;
  const [, claims] = await settled([
    begin(),
    claimsByKey(
      conn,
      refused.map((p) => ({ orgId: p.req.org_id, livemode: p.req.livemode, kind: p.req.kind, referenceId: p.req.reference_id })),
    ),
  ]);
  const byKey = new Map(claims.map((e) => [`${e.org_id}\u0000${e.livemode}\u0000${e.kind}\u0000${e.reference_id}`, e]));
  for (const p of refused) {
    const e = byKey.get(p.key);
    if (e !== undefined) verdicts.set(p, replayVerdict(p, e.id, e.request_hash, e.result));
  }
}

/** The answer to a key already posted: its first result, or a conflict when the request differs. */
function replayVerdict(p: Pending, transactionId: string, requestHash: string, result: Record<string, unknown>): Verdict {
  if (requestHash === p.hash || requestHash === p.hashWithoutDate) return { ok: true, outcome: { duplicate: true, result: result as unknown as PostResult } };
  return {
    ok: false,
    error: new DomainError("idempotency_conflict", `reference_id ${p.req.reference_id} was used with a different request`, {
      extra: { existing_transaction_id: transactionId },
    }),
  };
}

/**
 * A request that runs alone claims its key before anything else, so a concurrent duplicate waits on the claim
 * and then answers the first result, never what the extension would compute from the state the first left.
 */
async function claimFirst(
  conn: ReservedSql,
  begin: () => Promise<unknown>,
  p: Pending,
): Promise<{ ok: true; solo: SoloClaim } | { ok: false; verdict: Verdict }> {
  const req = p.req;
  const scope: Scope = { orgId: req.org_id, livemode: req.livemode };
  const transactionId = sortableId("txn");
  const [, claim] = await settled([
    begin(),
    claimTransaction(conn, scope, {
      id: transactionId,
      kind: req.kind,
      referenceId: req.reference_id,
      requestHash: p.hash,
      amount: 0,
      description: req.description ?? null,
      metadata: req.metadata ?? {},
      effectiveAt: req.effective_date === undefined ? null : new Date(req.effective_date),
    }),
  ]);
  if (!claim.inserted) return { ok: false, verdict: replayVerdict(p, claim.id, claim.requestHash, claim.result) };
  const derive = p.hooks?.derive;
  const derived = derive === undefined ? undefined : await p.inCallerContext(() => derive(conn, { transactionId, scope }));
  return { ok: true, solo: { transactionId, createdAt: claim.createdAt.toISOString(), derived } };
}

/** Step 2: everything the batch names, read and locked in one round trip (two when a request releases holds). */
async function readRows(
  conn: ReservedSql,
  begin: () => Promise<unknown>,
  list: readonly Pending[],
  solo: SoloClaim | undefined,
  cache: WalletCache,
  opts: CommitOptions,
  used: { cache: boolean },
): Promise<Rows> {
  const parts = new Map<string, { orgId: string; livemode: boolean; participantId: string }>();
  const targets = new Map<string, { orgId: string; livemode: boolean; participantId: string }>();
  const ids = new Set<string>();
  for (const p of list) {
    const s = { orgId: p.req.org_id, livemode: p.req.livemode };
    for (const ref of p.refs) {
      if ("participant_id" in ref) parts.set(scopeKey(s.orgId, s.livemode, ref.participant_id), { ...s, participantId: ref.participant_id });
      else if ("wallet_id" in ref) ids.add(ref.wallet_id.toLowerCase());
    }
    for (const h of p.req.holds_create) {
      const t = h.release_transfer_to_participant_id;
      if (t !== undefined) targets.set(scopeKey(s.orgId, s.livemode, t), { ...s, participantId: t });
    }
  }
  // Refunds: their sales (locked first), the creator wallet and the sale's source (when a wallet), its hold.
  const plans = list.flatMap((p) => (p.refund === undefined ? [] : [p.refund]));
  const systemNormals = new Map<string, Side>();
  for (const plan of plans) {
    if (plan.creatorWalletId !== null) ids.add(plan.creatorWalletId);
    ids.add(plan.sourceId);
    for (const [id, side] of plan.systemNormals) systemNormals.set(id, side);
  }
  const saleKeys = [
    ...new Map(
      plans.map((pl) => [scopeKey(pl.orgId, pl.livemode, pl.saleReference), { orgId: pl.orgId, livemode: pl.livemode, saleReference: pl.saleReference }]),
    ).values(),
  ];
  const planHolds = [...new Set(plans.flatMap((pl) => (pl.holdId === null ? [] : [pl.holdId])))].sort();

  // What a request that runs alone adds: the wallets of the holds it releases (a hold's wallet never changes, so
  // a plain read finds it before the wallets are locked), and the accounts its extension named by id.
  const alone = solo === undefined ? undefined : list[0];
  const scope = alone === undefined ? undefined : { orgId: alone.req.org_id, livemode: alone.req.livemode };
  const releaseIds = alone === undefined ? [] : alone.req.holds_release.map((h) => h.hold_id);
  const coverHold = solo?.derived?.cover?.holdId;
  // The holds locked: those released, and the sale's hold a cover may use.
  const holdIds = [...new Set([...releaseIds, ...(coverHold === null || coverHold === undefined ? [] : [coverHold])])].sort();
  const derivedIds = derivedAccountIds(solo?.derived);
  if (scope !== undefined && (holdIds.length > 0 || derivedIds.length > 0)) {
    const [, seen, kinds] = await settled([begin(), findHoldsByIds(conn, scope, holdIds), accountKinds(conn, scope, derivedIds)]);
    for (const h of seen) ids.add(h.wallet_id);
    for (const k of kinds) {
      if (k.is_wallet) ids.add(k.id);
      else systemNormals.set(k.id, k.normal_side);
    }
  }

  const partList = [...parts.values()];
  const sortedIds = [...ids].sort();
  const remembered =
    opts.useCache && !opts.readClaims && solo === undefined && parts.size === 0 && targets.size === 0 && plans.length === 0 ? cache.all(sortedIds) : undefined;
  used.cache = remembered !== undefined;
  if (remembered !== undefined) {
    return {
      participants: new Map(),
      locked: remembered,
      holds: new Map(),
      sales: new Map(),
      claims: [],
      owed: new Map(),
      existingParticipants: new Set(),
      systemNormals,
    };
  }
  const [, saleRows, participantRows, locked, claims, receivableRows, holdRows, planHoldRows] = await settled([
    begin(),
    // Sales, then wallets, then holds: the one lock order.
    lockSalesAnyScope(conn, saleKeys),
    participantWallets(conn, [...partList, ...targets.values()]),
    lockWalletsAnyScope(conn, sortedIds, partList),
    // A request that runs alone holds its claim already.
    opts.readClaims && solo === undefined
      ? claimsByKey(
          conn,
          list.map((p) => ({ orgId: p.req.org_id, livemode: p.req.livemode, kind: p.req.kind, referenceId: p.req.reference_id })),
        )
      : Promise.resolve([] as ExistingClaim[]),
    receivables(conn, partList),
    scope === undefined ? Promise.resolve([] as HoldRow[]) : lockHolds(conn, scope, holdIds),
    // A refund's hold comes from its own sale row, so its id is trusted whatever the scope.
    lockHoldsAnyScope(
      conn,
      planHolds.filter((id) => !holdIds.includes(id)),
    ),
  ]);

  // Creators with an outstanding receivable repay it from credits. Those named by participant were read above;
  // creator wallets named by wallet id are read now (after their lock), if any.
  const asked = new Set(partList.map((k) => scopeKey(k.orgId, k.livemode, k.participantId)));
  const missing = locked
    .filter((w) => w.account_type === "creator_earnings" && w.participant_id !== null && !asked.has(scopeKey(w.org_id, w.livemode, w.participant_id)))
    .map((w) => ({ orgId: w.org_id, livemode: w.livemode, participantId: w.participant_id ?? "" }));
  const allReceivables = missing.length > 0 ? [...receivableRows, ...(await receivables(conn, missing))] : receivableRows;
  return {
    participants: new Map(participantRows.map((r) => [scopeKey(r.org_id, r.livemode, r.participant_id), r.wallet_id])),
    locked,
    holds: new Map<string, LockedHold>([...holdRows, ...planHoldRows].map((h) => [h.id, h])),
    sales: new Map(saleRows.map((r) => [scopeKey(r.org_id, r.livemode, r.sale_reference), r])),
    claims,
    owed: new Map(
      allReceivables.filter((r) => r.outstanding > 0).map((r) => [scopeKey(r.org_id, r.livemode, r.entity_id), { id: r.id, outstanding: r.outstanding }]),
    ),
    existingParticipants: new Set(participantRows.map((r) => scopeKey(r.org_id, r.livemode, r.participant_id))),
    systemNormals,
  };
}

function derivedAccountIds(derived: Derived | undefined): string[] {
  if (derived === undefined) return [];
  const ids = new Set<string>();
  for (const p of derived.postings) {
    ids.add(p.debit);
    ids.add(p.credit);
  }
  if (derived.cover !== undefined) {
    ids.add(derived.cover.walletId);
    ids.add(derived.cover.receivableId);
  }
  return [...ids];
}

/**
 * Step 3: applies requests one after another to the in-memory state of the locked rows, and collects what the
 * accepted ones write.
 */
class BatchBuilder {
  private readonly state = new Map<string, WalletState>();
  private readonly holds = new Map<string, HoldState>();
  private readonly entries: BatchEntry[] = [];
  private readonly shardDeltas = new Map<string, number>();
  private readonly transactions: BatchWrite["transactions"][number][] = [];
  private readonly newHolds: BatchHold[] = [];
  private readonly releases: BatchRelease[] = [];
  private readonly reductions: BatchWrite["reductions"][number][] = [];
  private readonly sales: BatchSale[] = [];
  private readonly holdEvents: BatchEvent[] = [];
  /** Sales' remainders as the batch's refunds leave them, and the rows to write. */
  private readonly saleState: Map<string, LockedSale>;
  private readonly saleUpdates = new Map<string, BatchWrite["saleUpdates"][number]>();
  /** One ledger.transaction.posted event per (org, environment) of the batch, listing its transactions. */
  private readonly posted = new Map<string, { orgId: string; livemode: boolean; headers: Record<string, string>; items: Record<string, unknown>[] }>();
  private readonly createdAt: string;

  constructor(
    private readonly rows: Rows,
    private readonly systemIds: ReadonlyMap<string, string>,
    private readonly solo: SoloClaim | undefined,
  ) {
    for (const w of rows.locked) {
      this.state.set(w.id, {
        id: w.id,
        orgId: w.org_id,
        livemode: w.livemode,
        accountType: w.account_type,
        participantId: w.participant_id,
        status: w.status,
        normal: w.normal_side,
        balance: w.balance,
        held: w.held_amount,
      });
    }
    for (const h of rows.holds.values())
      this.holds.set(h.id, { id: h.id, walletId: h.wallet_id, participantId: h.participant_id, amount: h.amount, status: h.status, releaseId: h.release_id });
    this.createdAt = solo?.createdAt ?? new Date().toISOString();
    this.saleState = new Map(rows.sales);
  }

  private view(req: PostRequest): LedgerView {
    return new RequestView(this.rows, this.systemIds, this.state, this.holds, req.org_id, req.livemode);
  }

  /**
   * What a request adds to its own postings: an extension's derived changes (a request that runs alone), or a
   * refund's, computed from its sale's remainder as the batch has left it.
   */
  private changesOf(p: Pending): { changes: Derived | undefined; sale?: { key: string; after: LockedSale } } | DomainError {
    const plan = p.refund;
    const spec = p.req.refund;
    if (plan === undefined || spec === undefined) return { changes: this.solo?.derived };
    const key = scopeKey(plan.orgId, plan.livemode, plan.saleReference);
    const sale = this.saleState.get(key);
    if (sale === undefined) return new DomainError("original_sale_not_found", `Sale ${plan.saleReference} not found`);
    const parts = refundParts(saleStateOf(sale), spec.amount, spec.refund_from);
    if (parts instanceof DomainError) return parts;
    const cover =
      parts.fromCreator > 0 && plan.creatorWalletId !== null && plan.receivableId !== null
        ? {
            walletId: plan.creatorWalletId,
            holdId: plan.holdId,
            receivableId: plan.receivableId,
            reason: "refund",
            refuseShortfall: spec.shortfall === "refuse",
          }
        : undefined;
    const after: LockedSale = {
      ...sale,
      refunded_amount: cents(sale.refunded_amount + parts.amount),
      creator_refunded: cents(sale.creator_refunded + parts.fromCreator),
      platform_refunded: cents(sale.platform_refunded + parts.fromPlatform),
    };
    const extra = {
      refund: {
        sale_reference: plan.saleReference,
        sale_transaction_id: plan.saleTransactionId,
        participant_id: plan.participantId,
        amount: parts.amount,
        from_creator: parts.fromCreator,
        from_platform: parts.fromPlatform,
        sales_tax: parts.tax,
        refund_from: spec.refund_from,
        remaining_amount: parts.remaining,
        is_full_refund: parts.full,
        sale_gross: sale.gross,
      },
    };
    return { changes: { postings: refundPostings(plan, parts), ...(cover === undefined ? {} : { cover }), amount: parts.amount, extra }, sale: { key, after } };
  }

  apply(p: Pending): Verdict {
    const own = this.changesOf(p);
    if (own instanceof DomainError) return { ok: false, error: own };
    const derived = own.changes;
    const changes: DerivedChanges | undefined = derived === undefined ? undefined : { postings: derived.postings, cover: derived.cover };
    const applied = applyPosting(p.req, this.view(p.req), changes);
    if (applied instanceof DomainError) return { ok: false, error: applied };
    if (own.sale !== undefined) {
      this.saleState.set(own.sale.key, own.sale.after);
      const a = own.sale.after;
      this.saleUpdates.set(own.sale.key, {
        orgId: a.org_id,
        livemode: a.livemode,
        saleReference: a.sale_reference,
        refunded: a.refunded_amount,
        creatorRefunded: a.creator_refunded,
        platformRefunded: a.platform_refunded,
      });
    }
    const txnId = this.solo?.transactionId ?? sortableId("txn");
    for (const [id, st] of applied.wallets) {
      const w = this.state.get(id);
      if (w === undefined) throw new InvariantViolation(`applied wallet ${id} was not locked`);
      this.state.set(id, { ...w, balance: st.balance, held: st.held });
    }
    for (const r of applied.recoveries) {
      const debt = this.rows.owed.get(scopeKey(p.req.org_id, p.req.livemode, r.participantId));
      if (debt !== undefined) debt.outstanding -= r.amount;
    }
    for (const [id, d] of applied.systemDeltas) this.shardDeltas.set(id, (this.shardDeltas.get(id) ?? 0) + d);
    for (const e of applied.entries) {
      this.entries.push({
        id: sortableId("ent"),
        orgId: p.req.org_id,
        livemode: p.req.livemode,
        transactionId: txnId,
        accountId: e.account_id,
        entryType: e.entry_type,
        amount: e.amount,
        balanceAfter: e.balance_after,
      });
    }
    const created = this.createHolds(p, applied, txnId);
    const released = this.releaseHolds(p, applied, txnId);
    if (p.req.sale !== undefined) {
      const s = p.req.sale;
      const holdId = s.hold_index === undefined ? null : (created[s.hold_index]?.hold_id ?? null);
      this.sales.push({ orgId: p.req.org_id, livemode: p.req.livemode, ...newSale(s, txnId, holdId) });
    }
    const result = this.result(p, applied, txnId, created, released, derived);
    this.transactions.push({
      id: txnId,
      orgId: p.req.org_id,
      livemode: p.req.livemode,
      kind: p.req.kind,
      referenceId: p.req.reference_id,
      requestHash: p.hash,
      amount: result.amount,
      description: p.req.description ?? null,
      metadata: p.req.metadata ?? {},
      effectiveAt: p.req.effective_date === undefined ? null : new Date(p.req.effective_date).toISOString(),
      claimed: this.solo !== undefined,
      result: result as unknown as Record<string, unknown>,
    });
    this.addPosted(p, transactionPostedData(result, applied.entries));
    return { ok: true, outcome: { duplicate: false, result } };
  }

  private result(
    p: Pending,
    applied: Applied,
    txnId: string,
    created: PostResult["holds_created"],
    released: PostResult["holds_released"],
    derived: Derived | undefined,
  ): PostResult {
    // Keyed by wallet id: a dictionary from the start (a plain literal would give V8 a new hidden class per id).
    const walletsAfter = Object.create(null) as Record<string, WalletAfter>;
    for (const [id, st] of applied.wallets) walletsAfter[id] = { balance: st.balance, held_amount: st.held, available_balance: st.balance - st.held };
    const recovered = applied.recoveries.reduce((s, r) => s + r.amount, 0);
    return {
      transaction_id: txnId,
      kind: p.req.kind,
      reference_id: p.req.reference_id,
      amount: derived?.amount ?? applied.amount,
      created_at: this.createdAt,
      wallets: walletsAfter,
      holds_created: created,
      holds_released: released,
      extra: {
        ...(p.req.result_extra ?? {}),
        ...(derived?.extra ?? {}),
        ...(applied.covered === undefined ? {} : { hold_amount_used: applied.covered.fromHold, creator_receivable_amount: applied.covered.shortfall }),
        ...(recovered > 0 ? { receivable_recovered: recovered } : {}),
      },
    };
  }

  private createHolds(p: Pending, applied: Applied, txnId: string): PostResult["holds_created"] {
    const out: PostResult["holds_created"] = [];
    for (const [i, spec] of p.req.holds_create.entries()) {
      const on = applied.holdsCreated[i];
      if (on === undefined) throw new InvariantViolation("hold without its wallet");
      const hold: BatchHold = {
        id: sortableId("hold"),
        orgId: p.req.org_id,
        livemode: p.req.livemode,
        walletId: on.walletId,
        participantId: on.participantId,
        amount: spec.amount,
        referenceId: spec.reference_id ?? `${p.req.kind}:${p.req.reference_id}${i > 0 ? `:${i}` : ""}`,
        reasonCode: spec.reason_code,
        description: spec.description ?? null,
        holdUntil: spec.hold_until === undefined ? null : new Date(spec.hold_until).toISOString(),
        releaseTransferTo: spec.release_transfer_to_participant_id ?? null,
        transactionId: txnId,
        metadata: (spec.metadata ?? {}) as Record<string, unknown>,
      };
      this.newHolds.push(hold);
      out.push({ hold_id: hold.id, wallet_id: hold.walletId, participant_id: hold.participantId, amount: hold.amount, reference_id: hold.referenceId });
      this.holdEvents.push({
        id: sortableId("evt"),
        orgId: hold.orgId,
        livemode: hold.livemode,
        type: "hold.created",
        headers: p.headers,
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
    return out;
  }

  private releaseHolds(p: Pending, applied: Applied, txnId: string): PostResult["holds_released"] {
    const out: PostResult["holds_released"] = [];
    for (const { hold: h, transferExecuted, reason } of applied.holdsReleased) {
      const releaseId = newId("rel");
      this.releases.push({ holdId: h.id, releaseId, transactionId: txnId, transferExecuted });
      this.holds.set(h.id, { ...h, status: "released", releaseId });
      // A hold a cover used whole ended with the transaction that took the money back, not by a client's release.
      if (reason === undefined)
        out.push({ hold_id: h.id, release_id: releaseId, wallet_id: h.walletId, amount: h.amount, transfer_executed: transferExecuted });
      this.holdEvents.push({
        id: sortableId("evt"),
        orgId: p.req.org_id,
        livemode: p.req.livemode,
        type: "hold.released",
        headers: p.headers,
        data: {
          hold_id: h.id,
          release_id: releaseId,
          participant_id: h.participantId,
          wallet_id: h.walletId,
          amount: h.amount,
          currency: CURRENCY,
          transfer_executed: transferExecuted,
          transaction_id: txnId,
          ...(reason === undefined ? {} : { reason }),
        },
      });
    }
    for (const { hold: h, by } of applied.holdsReduced) {
      this.reductions.push({ holdId: h.id, by });
      this.holds.set(h.id, { ...h, amount: cents(h.amount - by) });
    }
    return out;
  }

  /**
   * The internal event lists the batch's transactions of one org and environment. Its headers are the first
   * request's; each item names its own request id and trace, so a consumer can follow every one.
   */
  private addPosted(p: Pending, item: Record<string, unknown>): void {
    const key = `${p.req.org_id}\u0000${p.req.livemode}`;
    let group = this.posted.get(key);
    if (group === undefined) {
      group = { orgId: p.req.org_id, livemode: p.req.livemode, headers: p.headers, items: [] };
      this.posted.set(key, group);
    }
    group.items.push({ ...item, ...traceOf(p.headers) });
  }

  /** Step 4's input. Locked rows are written when they changed; remembered rows always (the guarded write is what makes reading them exact). */
  write(remembered: boolean, shard: () => number): BatchWrite {
    const wallets: BatchWrite["wallets"][number][] = [];
    for (const w of this.rows.locked) {
      const st = this.state.get(w.id);
      if (st === undefined) continue;
      if (remembered || w.balance !== st.balance || w.held_amount !== st.held) wallets.push({ id: w.id, balance: st.balance, held: st.held, xmin: w.xmin });
    }
    const shards = [...this.shardDeltas.entries()].filter(([, d]) => d !== 0).map(([accountId, delta]) => ({ accountId, shard: shard(), delta }));
    const events: BatchEvent[] = [...this.posted.values()].map((g) => ({
      id: sortableId("evt"),
      orgId: g.orgId,
      livemode: g.livemode,
      type: "ledger.transaction.posted",
      headers: g.headers,
      data: transactionsPostedData(g.items),
    }));
    events.push(...this.holdEvents);
    return {
      transactions: this.transactions,
      entries: this.entries,
      wallets,
      shards,
      events,
      holds: this.newHolds,
      sales: this.sales,
      releases: this.releases,
      reductions: this.reductions,
      saleUpdates: [...this.saleUpdates.values()],
    };
  }
}

function traceOf(headers: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  const requestId = headers["x-request-id"];
  const traceparent = headers["traceparent"];
  if (requestId !== undefined) out["request_id"] = requestId;
  if (traceparent !== undefined) out["traceparent"] = traceparent;
  return out;
}

/** A reference (org, env, kind, reference_id) already taken: committed, or claimed by a concurrent transaction. */
export function isReferenceClaimed(e: unknown): boolean {
  return e instanceof postgres.PostgresError && e.code === "23505" && e.constraint_name === "transactions_reference_uq";
}

/** A hold or sale reference already taken: the client's error, answered to the request that caused it. */
export function referenceTakenError(e: unknown): DomainError | undefined {
  if (!(e instanceof postgres.PostgresError) || e.code !== "23505") return undefined;
  if (e.constraint_name === "holds_reference_uq") return new DomainError("duplicate_reference_id", "A hold with this reference_id exists");
  if (e.constraint_name === "sales_pkey") return new DomainError("duplicate_reference_id", "This sale reference was already recorded");
  return undefined;
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

function saleStateOf(s: LockedSale): SaleState {
  return {
    saleReference: s.sale_reference,
    gross: s.gross,
    creatorAmount: s.creator_amount,
    salesTax: s.sales_tax,
    refundedAmount: s.refunded_amount,
    creatorRefunded: s.creator_refunded,
    platformRefunded: s.platform_refunded,
    reversed: s.reversed,
  };
}

/**
 * The engine's view of the batch for one request's org and environment. A class rather than an object of arrow
 * functions: the view is made once per request, and each named closure would cost a property definition.
 */
class RequestView implements LedgerView {
  constructor(
    private readonly rows: Rows,
    private readonly systemIds: ReadonlyMap<string, string>,
    private readonly state: ReadonlyMap<string, WalletState>,
    private readonly holds: ReadonlyMap<string, HoldState>,
    private readonly orgId: string,
    private readonly livemode: boolean,
  ) {}

  systemAccountId(type: SystemAccountType, entityId: string): string | undefined {
    return this.systemIds.get(scopeKey(this.orgId, this.livemode, `${type}:${entityId}`));
  }

  participantWalletId(participantId: string): string | undefined {
    return this.rows.participants.get(scopeKey(this.orgId, this.livemode, participantId));
  }

  wallet(id: string): WalletState | undefined {
    return this.state.get(id);
  }

  hold(id: string): HoldState | undefined {
    return this.holds.get(id);
  }

  receivable(participantId: string): { id: string; outstanding: Cents } | undefined {
    const r = this.rows.owed.get(scopeKey(this.orgId, this.livemode, participantId));
    return r === undefined ? undefined : { id: r.id, outstanding: cents(r.outstanding) };
  }

  participantExists(participantId: string): boolean {
    return this.rows.existingParticipants.has(scopeKey(this.orgId, this.livemode, participantId));
  }

  systemAccountNormal(id: string): Side | undefined {
    return this.rows.systemNormals.get(id);
  }
}
