/**
 * Steps 2 and 3 of moving money across services (docs/architecture.md, "Money across services"): the intent is
 * already recorded (step 1, the caller's own statement); here the ledger is asked to post it under the intent's
 * reference (idempotent: any number of drivers move money once), then the intent is settled. What a ledger
 * answer means is decided here, once:
 * - a definitive refusal (a DomainError the same request will always get) fails the intent: `refused`;
 * - no answer (LedgerOutcomeUnknown) leaves it pending for the next driver (the caller, a replay, or the
 *   reconciler) and answers service_timeout: never "failed", the money may have moved;
 * - anything else is a bug and propagates.
 */
import { DomainError } from "@treasury/contracts";
import { LedgerOutcomeUnknown } from "./ledger-port.ts";

export interface PostAndSettle<P, R> {
  /** Step 2: the ledger post, built only from the stored intent so that every driver sends the same request. */
  post: () => Promise<P>;
  /** Step 3: records what the ledger did (and the events it causes). */
  settle: (posted: P) => Promise<R>;
  /** Fails the intent on a definitive refusal; answers (or throws) what the caller gets. */
  refused: (e: DomainError) => Promise<R>;
  /** Which refusals are definitive; without it every DomainError is. */
  isDefinitive?: (e: DomainError) => boolean;
  /** The service_timeout message: what the caller should do while the intent stays pending. */
  pendingMessage: string;
  /** Before the post and between post and settle: the crash points of the recovery tests (no-ops otherwise). */
  beforePost?: () => Promise<void>;
  afterPost?: () => Promise<void>;
}

export async function postAndSettle<P, R>(steps: PostAndSettle<P, R>): Promise<R> {
  await steps.beforePost?.();
  let posted: P;
  try {
    posted = await steps.post();
  } catch (e) {
    if (e instanceof DomainError && (steps.isDefinitive?.(e) ?? true)) return steps.refused(e);
    if (e instanceof LedgerOutcomeUnknown) throw new DomainError("service_timeout", steps.pendingMessage);
    throw e;
  }
  await steps.afterPost?.();
  return steps.settle(posted);
}
