/**
 * What a posting request is, before the posting engine (usecases/poster.ts) takes it: its parsing, the
 * in-process extensions some operations add, and the port every money-moving use case depends on.
 */
import { DomainError, PostRequest, validationProblem, type PostOutcome } from "@treasury/contracts";
import type { Cover } from "../domain/engine.ts";
import type { RefundPlan } from "../domain/refund.ts";
import type { ResolvedPosting } from "../domain/posting.ts";
import type { Scope } from "../store/accounts.ts";
import type { Q } from "../store/db.ts";

/** Postings computed inside the transaction (under row locks the extension takes), by account id. */
export interface Derived {
  postings: ResolvedPosting[];
  /** Who covers what the postings take from a creator wallet (the engine applies it: domain/engine.ts). */
  cover?: Cover;
  /** The transaction's headline amount, when only the extension knows it. */
  amount?: number;
  extra?: Record<string, unknown>;
}

/**
 * In-process extensions of a post (never reachable over RPC). `derive` runs inside the transaction right after
 * the idempotency claim, so it can lock rows (a sale, a bill) and compute postings from what it read; it locks
 * rows other than wallets and holds before the engine locks those (sales, transactions, bills, then wallets,
 * then holds: one order everywhere). `hashInput` replaces the request as the idempotency hash (what the client
 * asked for, when the postings depend on state).
 */
export interface PostHooks {
  derive?: (tx: Q, ctx: { transactionId: string; scope: Scope }) => Promise<Derived>;
  hashInput?: unknown;
  /** A refund's facts about its sale: the engine computes the refund inside the batch (usecases/refund.ts). */
  refund?: RefundPlan;
}

/** The posting engine, as the use cases see it. */
export interface PostPort {
  /** Posts a request; `duplicate` is true when the key was already posted with the same request. */
  post(input: unknown, hooks?: PostHooks): Promise<PostOutcome>;
}

export function parsePostRequest(input: unknown, derived = false): PostRequest {
  const parsed = PostRequest.safeParse(input);
  if (!parsed.success) {
    throw new DomainError("validation_error", "Invalid posting request", { details: validationProblem(parsed.error).details });
  }
  const req = parsed.data;
  if (!derived && req.postings.length === 0 && req.holds_create.length === 0 && req.holds_release.length === 0) {
    throw new DomainError("validation_error", "A posting request must post, create or release something");
  }
  const releaseIds = req.holds_release.map((h) => h.hold_id);
  if (new Set(releaseIds).size !== releaseIds.length) throw new DomainError("validation_error", "holds_release names a hold twice");
  if (req.sale?.hold_index !== undefined && req.sale.hold_index >= req.holds_create.length) {
    throw new DomainError("validation_error", "sale.hold_index does not name a hold in holds_create");
  }
  return req;
}

/**
 * Whether a request may share a database transaction with others: requests that release holds, post nothing
 * (a refund posts what the engine computes), or carry an in-process extension run alone (a batch of one),
 * taking their idempotency claim first.
 */
export function batchable(req: PostRequest, hooks: PostHooks | undefined): boolean {
  if (hooks?.derive !== undefined || hooks?.hashInput !== undefined || req.holds_release.length > 0) return false;
  return req.postings.length > 0 || (hooks?.refund !== undefined && req.refund !== undefined);
}
