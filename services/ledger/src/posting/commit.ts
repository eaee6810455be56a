/**
 * The posting transaction: one database transaction for a batch of posting requests. A single post is a batch of
 * one. Every request is checked by the one rule engine (engine.ts) against the rows read and locked here, in
 * arrival order, so a rejected request is answered with its error and writes nothing while its neighbours commit.
 * Nobody is answered before COMMIT.
 *
 * Steps, all on one reserved connection with statements pipelined:
 * 1. A request that runs alone (see request.ts, batchable) takes its idempotency claim first and then runs its
 *    in-process extension, which may lock rows of its own (a sale, a bill) and derive postings from them.
 * 2. One round trip reads and locks everything the batch names (read.ts).
 * 3. The engine applies each request to the in-memory state of those rows (builder.ts).
 * 4. One statement writes everything (store/batch.ts), with COMMIT pipelined behind it. A batch request's
 *    idempotency claim is its transaction row in that statement: a key already taken fails the statement
 *    (transactions_reference_uq) and the caller runs the batch again reading the claims first.
 */
import { DomainError, type PostResult } from "@treasury/contracts";
import type { ReservedSql } from "postgres";
import { sortableId } from "../domain/ids.ts";
import { claimsByKey } from "../store/batch-reads.ts";
import { writeBatch } from "../store/batch.ts";
import type { Sql } from "../store/db.ts";
import { claimTransaction } from "../store/transactions.ts";
import { pgTxStore } from "../store/tx.ts";
import { BatchBuilder } from "./builder.ts";
import type { CommitOptions, Pending, SoloClaim, Verdict } from "./pending.ts";
import { readRows, type Rows } from "./read.ts";
import { settled } from "./statements.ts";
import type { WalletCache } from "./wallet-cache.ts";

type Begin = () => Promise<unknown>;

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
  begin: Begin,
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
  const fresh = answerClaimed(list, rows, verdicts);
  const batch = new BatchBuilder(rows, systemIds, solo, opts.sandboxAdvance);
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

  // Step 4: the batch's one write with COMMIT pipelined behind it; then the wallet rows as it left them are remembered.
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

/** Requests whose key the read found posted already get their replay's answer here; the others are returned for the engine. */
function answerClaimed(list: readonly Pending[], rows: Rows, verdicts: Map<Pending, Verdict>): Pending[] {
  const byKey = new Map(rows.claims.map((e) => [`${e.org_id}\u0000${e.livemode}\u0000${e.kind}\u0000${e.reference_id}`, e]));
  const fresh: Pending[] = [];
  for (const p of list) {
    const e = byKey.get(p.key);
    if (e === undefined) fresh.push(p);
    else verdicts.set(p, replayVerdict(p, e.id, e.request_hash, e.result));
  }
  return fresh;
}

/**
 * A refused request may be the replay of one already posted (a withdrawal replayed after the balance moved, a
 * refund replayed after the sale was refunded in full): it gets the first result, not the refusal. Claims are read
 * only for refused requests (rarely any): the accepted ones find a taken key at the write.
 */
async function answerReplays(conn: ReservedSql, begin: Begin, fresh: readonly Pending[], verdicts: Map<Pending, Verdict>): Promise<void> {
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
async function claimFirst(conn: ReservedSql, begin: Begin, p: Pending): Promise<{ ok: true; solo: SoloClaim } | { ok: false; verdict: Verdict }> {
  const req = p.req;
  const tenant = { orgId: req.org_id, livemode: req.livemode };
  const transactionId = sortableId("txn");
  const [, claim] = await settled([
    begin(),
    claimTransaction(conn, tenant, {
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
  const derived = derive === undefined ? undefined : await p.inCallerContext(() => derive(pgTxStore(conn), { transactionId, tenant }));
  return { ok: true, solo: { transactionId, createdAt: claim.createdAt.toISOString(), derived } };
}
