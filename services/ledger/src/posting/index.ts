/**
 * The posting engine: the one way money moves in the ledger, and (through store/batch.ts) the only writer of
 * ledger entries, wallet balances and system-account balance shards. Every money-moving use case and the internal
 * `svc.ledger.post` RPC reach it through `Poster.post` (the PostPort of usecases/ports.ts); a single post is a batch
 * of one. ADR 0004 (group commit, hot accounts) and ADR 0007 (one posting engine).
 *
 * A request's path, file by file:
 * - request.ts    parses and checks a posting request; decides whether it may share a transaction (batchable).
 * - pending.ts    the queued request (Pending), its idempotency key and the wallet keys batches are kept apart by.
 * - poster.ts     the queue: forms batches in arrival order (up to 256 requests, batches in flight never sharing a
 *                 wallet, each owning its own balance shards), retries serialization failures and deadlocks, runs a
 *                 batch that failed as a whole again request by request, answers followers of a duplicate key.
 * - commit.ts     one batch's database transaction on a reserved connection: a solo request's claim and in-process
 *                 extension, then read.ts, builder.ts and the one write with COMMIT pipelined behind it.
 * - read.ts       reads and locks everything the batch names in one round trip (wallet-cache.ts: remembered rows a
 *                 batch may use instead, its write then guarded by the rows' versions).
 * - builder.ts    applies each request in order with the rules (engine.ts, cover.ts) to the in-memory rows
 *                 (view.ts), adds a refund's changes (refund-changes.ts), and collects the rows and events to write
 *                 (outcome.ts).
 * - statements.ts how pipelined statements are awaited and what PostgreSQL's refusals mean.
 * - metrics.ts    the batch-size histogram on /metrics.
 *
 * Lock order (every transaction that locks ledger rows follows it, or it deadlocks under load):
 * 1. a request that runs alone: its idempotency claim (its transaction row), then the rows its in-process extension
 *    locks (usecases/reverse.ts: the original's sale, the original transaction, the sale a reversed refund gives
 *    back to; usecases/records.ts: a bill);
 * 2. sales a batch's refunds name, in key order (read.ts);
 * 3. wallets, in ascending id order, in one statement (read.ts);
 * 4. holds, in id order (read.ts).
 * Balance shards are not locked up front: each batch in flight updates only its own slot's shards. A batch whose
 * wallets are all remembered (wallet-cache.ts) takes their locks only in its write, guarded by the rows' versions:
 * no other batch of this process can hold them, and a row another one changed fails the write, which then runs
 * again with step 3.
 */
export { postBatchSizes } from "./metrics.ts";
export { BATCH_SIZE_MAX, Poster, QUEUE_LENGTH_MAX, type PosterOptions } from "./poster.ts";
export { parsePostRequest } from "./request.ts";
