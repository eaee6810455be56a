/** A posting request in the poster's queue, what its batch answers it, and the keys batches are formed by. */
import type { AccountRef, DomainError, PostOutcome, PostRequest } from "@treasury/contracts";
import type { RefundPlan } from "../domain/refund.ts";
import type { Derived, PostHooks } from "../usecases/ports.ts";

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

/** A request that runs alone: its claim, and what its extension derived. */
export interface SoloClaim {
  transactionId: string;
  createdAt: string;
  derived: Derived | undefined;
}

export interface CommitOptions {
  /** Read the keys already posted before writing (after a reference was found taken). */
  readClaims: boolean;
  /** May use remembered wallet rows instead of locking them. */
  useCache: boolean;
  /** The balance shard a system account's delta lands on. */
  shard: () => number;
  /** Seconds an org's sandbox runs ahead of real time: what a sandbox posting adds to its created_at. */
  sandboxAdvance: (orgId: string) => number;
}

/** The wallets a request names, as batches in flight are kept apart by (`w:<id>` or `p:<org>/<env>/<participant>`). */
export function walletKeys(req: PostRequest, refs: readonly AccountRef[]): string[] {
  const keys: string[] = [];
  for (const ref of refs) {
    if ("wallet_id" in ref) keys.push(`w:${ref.wallet_id.toLowerCase()}`);
    else if ("participant_id" in ref) keys.push(`p:${scopeKey(req.org_id, req.livemode, ref.participant_id)}`);
  }
  return keys;
}

/** Every account a request names. */
export function refsOf(req: PostRequest): AccountRef[] {
  return [...req.postings.flatMap((p) => [p.debit, p.credit]), ...req.preconditions.map((p) => p.wallet), ...req.holds_create.map((h) => h.wallet)];
}
