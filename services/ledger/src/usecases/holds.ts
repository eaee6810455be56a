/** Holds: create, list, summary, release (optionally executing the hold's release transfer, never a payout). */
import { DomainError, type schemas } from "@treasury/contracts";
import type { z } from "zod";
import type { PostOutcome, PostRequestInput } from "@treasury/contracts";
import { findCreatorWallet, type Scope, type WalletRow } from "../store/accounts.ts";
import type { Sql } from "../store/db.ts";
import { findHold, holdsSummary, listHolds as listRows } from "../store/holds.ts";
import { participantExists } from "../store/participants.ts";
import { duplicateReference } from "./movements.ts";
import type { PostPort } from "./post-request.ts";
import { holdReady, presentHold, presentRelease } from "./present.ts";
import { loadWallet } from "./wallets.ts";

type CreateHoldBody = z.output<typeof schemas.CreateHoldBody>;
type ListHoldsQuery = z.output<typeof schemas.ListHoldsQuery>;

export const KIND_HOLD = "hold";
export const KIND_HOLD_RELEASE = "hold_release";
export const HOLD_PAGE_DEFAULT = 100;
export const DEFAULT_HOLD_REASON = "temporary_hold";

async function holdWallet(sql: Sql, scope: Scope, body: CreateHoldBody): Promise<WalletRow> {
  if (body.wallet_id !== undefined) {
    const w = await loadWallet(sql, scope, body.wallet_id);
    if (body.participant_id !== undefined && w.participant_id !== body.participant_id) {
      throw new DomainError("validation_error", "wallet_id is not the participant's wallet", {
        details: [{ path: "wallet_id", message: "does not belong to participant_id" }],
      });
    }
    return w;
  }
  if (body.participant_id === undefined) {
    throw new DomainError("validation_error", "participant_id or wallet_id is required", {
      details: [{ path: "participant_id", message: "participant_id or wallet_id is required" }],
    });
  }
  const w = await findCreatorWallet(sql, scope, body.participant_id);
  if (w === undefined) throw new DomainError("participant_not_found", `Participant ${body.participant_id} not found`);
  return w;
}

async function loadCreatedHold(sql: Sql, scope: Scope, outcome: PostOutcome, now: Date): Promise<Record<string, unknown>> {
  const created = outcome.result.holds_created[0];
  const hold = created === undefined ? undefined : await findHold(sql, scope, created.hold_id);
  if (hold === undefined) throw new Error(`hold of transaction ${outcome.result.transaction_id} not found`);
  return presentHold(hold, now);
}

/**
 * Reserves part of a wallet's available balance.
 * Errors: validation_error, wallet_not_found, participant_not_found, insufficient_balance, wallet_not_active,
 * duplicate_reference_id, idempotency_conflict.
 */
export async function createHold(sql: Sql, scope: Scope, body: CreateHoldBody, poster: PostPort, now: () => Date = () => new Date()) {
  const wallet = await holdWallet(sql, scope, body);
  const target = body.release_transfer_to_participant_id;
  if (target !== undefined && !(await participantExists(sql, scope, target))) {
    throw new DomainError("participant_not_found", `Participant ${target} not found`);
  }
  const request: PostRequestInput = {
    org_id: scope.orgId,
    livemode: scope.livemode,
    kind: KIND_HOLD,
    reference_id: body.reference_id,
    holds_create: [
      {
        wallet: { wallet_id: wallet.id },
        amount: body.amount,
        reference_id: body.reference_id,
        reason_code: body.hold_reason_code ?? DEFAULT_HOLD_REASON,
        ...(body.description !== undefined ? { description: body.description } : {}),
        ...(body.hold_until !== undefined ? { hold_until: new Date(body.hold_until).toISOString() } : {}),
        ...(target !== undefined ? { release_transfer_to_participant_id: target } : {}),
        ...(body.metadata !== undefined ? { metadata: body.metadata } : {}),
      },
    ],
    ...(body.description !== undefined ? { description: body.description } : {}),
  };
  const outcome = await poster.post(request);
  const hold = await loadCreatedHold(sql, scope, outcome, now());
  if (outcome.duplicate) throw duplicateReference(outcome, "hold", hold);
  return { hold };
}

export async function listHolds(sql: Sql, scope: Scope, query: ListHoldsQuery & { offset?: number | undefined }, now: () => Date = () => new Date()) {
  const limit = query.limit ?? HOLD_PAGE_DEFAULT;
  const offset = query.offset ?? 0;
  const { rows, total } = await listRows(
    sql,
    scope,
    { participantId: query.participant_id, ventureId: query.venture_id, readyOnly: query.ready_only, status: "held" },
    limit,
    offset,
  );
  const at = now();
  return { holds: rows.map((h) => presentHold(h, at)), count: rows.length, total, limit, offset };
}

export async function getHoldsSummary(sql: Sql, scope: Scope) {
  return { summary: await holdsSummary(sql, scope) };
}

/**
 * Releases a hold: its amount becomes available. With execute_transfer, the hold's release transfer (to
 * release_transfer_to_participant_id) runs in the same transaction; a release never pays out.
 * Errors: hold_not_found, hold_already_released (with the earlier release), hold_not_ready,
 * wallet_not_transferable, participant_not_found, wallet_not_active.
 */
export async function releaseHold(
  sql: Sql,
  scope: Scope,
  holdId: string,
  body: { execute_transfer?: boolean | undefined },
  poster: PostPort,
  now: () => Date = () => new Date(),
) {
  const hold = await findHold(sql, scope, holdId);
  if (hold === undefined) throw new DomainError("hold_not_found", `Hold ${holdId} not found`);
  if (hold.status === "released") throw alreadyReleased(hold);
  if (!holdReady(hold, now())) {
    throw new DomainError("hold_not_ready", `Hold ${holdId} is held until ${hold.hold_until?.toISOString()}`, {
      hint: `Release after hold_until (${hold.hold_until?.toISOString()}); GET /v1/holds?ready_only=true lists releasable holds`,
      extra: { hold_until: hold.hold_until?.toISOString() ?? null },
    });
  }
  const target = hold.release_transfer_to_participant_id;
  const execute = body.execute_transfer === true && target !== null;
  if (execute) {
    const from = await loadWallet(sql, scope, hold.wallet_id);
    const to = await findCreatorWallet(sql, scope, target);
    if (to === undefined) throw new DomainError("participant_not_found", `Participant ${target} not found`);
    for (const w of [from, to]) {
      if (!w.transferable) throw new DomainError("wallet_not_transferable", `Wallet ${w.id} does not permit transfers`, { extra: { wallet_id: w.id } });
    }
  }
  const request: PostRequestInput = {
    org_id: scope.orgId,
    livemode: scope.livemode,
    kind: KIND_HOLD_RELEASE,
    reference_id: hold.id,
    holds_release: [{ hold_id: hold.id, transfer_executed: execute }],
    postings: execute && target !== null ? [{ debit: { wallet_id: hold.wallet_id }, credit: { participant_id: target }, amount: hold.amount }] : [],
    amount: hold.amount,
  };
  let outcome: PostOutcome;
  try {
    outcome = await poster.post(request);
  } catch (e) {
    // A concurrent release won: answer what it did.
    if (e instanceof DomainError && (e.code === "hold_already_released" || e.code === "idempotency_conflict")) {
      const now2 = await findHold(sql, scope, holdId);
      if (now2 !== undefined && now2.status === "released") throw alreadyReleased(now2);
    }
    throw e;
  }
  const after = await findHold(sql, scope, holdId);
  if (after === undefined || after.status !== "released") throw new Error(`hold ${holdId} not released after its release posted`);
  if (outcome.duplicate) throw alreadyReleased(after);
  return { release: presentRelease(after) };
}

function alreadyReleased(hold: Parameters<typeof presentRelease>[0]): DomainError {
  return new DomainError("hold_already_released", `Hold ${hold.id} was already released`, {
    extra: { release: presentRelease(hold), existing_transaction_id: hold.release_transaction_id },
  });
}
