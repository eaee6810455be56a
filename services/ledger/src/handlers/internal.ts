/**
 * What only other services call, on subjects the gateway never routes: `svc.ledger.post` (payments, payouts and
 * refunds move money through it) and the internal reads (`svc.ledger.internal.*`: transaction records, sale
 * summaries, many participants' balances at once). Each payload names its org and
 * environment itself.
 */
import { parseOrThrow, schemas, tenantOf, type PostOutcome } from "@treasury/contracts";
import type { Service } from "@treasury/service-kit";
import { parsePostRequest } from "../posting/index.ts";
import type { LedgerDeps } from "../usecases/deps.ts";
import { participantBalances } from "../usecases/participants.ts";
import { postRefund } from "../usecases/refund.ts";
import { withPayoutFloor, withSaleReserve } from "../usecases/reserves.ts";
import { saleSummary } from "../usecases/sale-summary.ts";
import { transactionRecord } from "../usecases/transaction-record.ts";

export function registerInternalHandlers(svc: Pick<Service, "handleInternal">, deps: LedgerDeps): void {
  registerPost(svc, deps);
  svc.handleInternal(
    schemas.TRANSACTION_RECORD_OPERATION,
    (payload) => parseOrThrow(schemas.TransactionRecordRequest, payload),
    async (req) => ({ transaction: await transactionRecord(deps, tenantOf(req), req.transaction_id) }),
  );
  svc.handleInternal(
    schemas.PARTICIPANT_BALANCES_OPERATION,
    (payload) => parseOrThrow(schemas.ParticipantBalancesRequest, payload),
    async (req) => ({ participants: await participantBalances(deps, tenantOf(req), req.participant_ids) }),
  );
  svc.handleInternal(
    schemas.SALE_SUMMARY_OPERATION,
    (payload) => parseOrThrow(schemas.SaleSummaryRequest, payload),
    async (req) => ({ sale: await saleSummary(deps, tenantOf(req), req.sale_reference) }),
  );
}

/**
 * `svc.ledger.post`: the payload is a PostRequest; the reply body is the PostResult plus `duplicate`. Plain
 * posting requests are group-committed (posting/poster.ts); the reply is sent only after their COMMIT. A refund
 * (`refund` in the payload) has its postings computed by the ledger (usecases/refund.ts).
 */
export function registerPost(svc: Pick<Service, "handleInternal">, deps: LedgerDeps): void {
  svc.handleInternal("post", postPayload, async (payload) => {
    const outcome = isRefund(payload) ? await postRefund(deps, parsePostRequest(payload, true)) : await postPlain(deps, payload);
    return { duplicate: outcome.duplicate, ...outcome.result };
  });
}

/**
 * A plain posting; a sale among them gets its creator's rolling reserve, a payout keeps its creator's fixed
 * reserve (usecases/reserves.ts).
 */
async function postPlain(deps: LedgerDeps, payload: unknown): Promise<PostOutcome> {
  const reserving = isSale(payload) ? withSaleReserve : isPayout(payload) ? withPayoutFloor : undefined;
  if (reserving === undefined) return deps.poster.post(payload);
  const request = parsePostRequest(payload);
  const reserved = await reserving(deps, request);
  return reserved === undefined ? deps.poster.post(request) : deps.poster.post(reserved.request, reserved.hooks);
}

/** The payload as sent: nearly every request is a plain posting, which the poster parses once (a refund is parsed above). */
function postPayload(payload: unknown): unknown {
  return payload;
}

/** Cheap looks before parsing. */
function isSale(payload: unknown): boolean {
  return typeof payload === "object" && payload !== null && (payload as Record<string, unknown>)["sale"] !== undefined;
}

function isPayout(payload: unknown): boolean {
  return typeof payload === "object" && payload !== null && (payload as Record<string, unknown>)["kind"] === "payout";
}

function isRefund(payload: unknown): boolean {
  return typeof payload === "object" && payload !== null && (payload as Record<string, unknown>)["refund"] !== undefined;
}
