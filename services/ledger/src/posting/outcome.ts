/**
 * What an accepted request answers and writes (builder.ts): its PostResult, its holds' rows and their events.
 * Pure shaping of what the engine decided; the builder collects them for the batch's one write.
 */
import type { PostResult, WalletAfter } from "@treasury/contracts";
import type { BatchEvent, BatchHold } from "../store/batch.ts";
import { sortableId } from "../domain/ids.ts";
import type { Derived } from "../usecases/ports.ts";
import { CURRENCY } from "../usecases/present.ts";
import type { Applied, HoldState } from "./engine.ts";
import type { Pending } from "./pending.ts";

export function postResult(
  p: Pending,
  applied: Applied,
  txnId: string,
  createdAt: string,
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
    created_at: createdAt,
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

/** The row of the `i`-th hold a request creates (`spec`), on the wallet the engine resolved. */
export function newHold(p: Pending, spec: Pending["req"]["holds_create"][number], i: number, on: Applied["holdsCreated"][number], txnId: string): BatchHold {
  return {
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
    // Only an in-process use case asks for it (PostHooks.autoRelease): the posting RPC cannot.
    autoRelease: spec.hold_until !== undefined && p.hooks?.autoRelease?.includes(i) === true,
  };
}

export function holdCreatedEvent(p: Pending, hold: BatchHold, txnId: string): BatchEvent {
  return {
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
      auto_release: hold.autoRelease,
      reference_id: hold.referenceId,
      transaction_id: txnId,
    },
  };
}

export function holdReleasedEvent(
  p: Pending,
  h: HoldState,
  releaseId: string,
  transferExecuted: boolean,
  reason: string | undefined,
  txnId: string,
): BatchEvent {
  return {
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
      // A cover that used a hold whole is neither a client's release nor the schedule's.
      ...(reason === undefined && p.hooks?.releasedBy !== undefined ? { released_by: p.hooks.releasedBy } : {}),
    },
  };
}

/** The request id and trace a posted event's item names (its own, whatever the event's headers). */
export function traceOf(headers: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  const requestId = headers["x-request-id"];
  const traceparent = headers["traceparent"];
  if (requestId !== undefined) out["request_id"] = requestId;
  if (traceparent !== undefined) out["traceparent"] = traceparent;
  return out;
}
