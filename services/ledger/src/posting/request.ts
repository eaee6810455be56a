/**
 * What a posting request is before the poster (poster.ts) queues it: its parsing and checks, and whether it may
 * share a database transaction with others. The hooks a use case may add (PostHooks) are a port:
 * usecases/ports.ts.
 */
import { DomainError, PostRequest, validationProblem } from "@treasury/contracts";
import type { PostHooks } from "../usecases/ports.ts";

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
