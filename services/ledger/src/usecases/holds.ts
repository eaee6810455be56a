/** Holds: create, list, summary, release (optionally executing the hold's release transfer, never a payout). */
import { DomainError, type PostOutcome, type PostRequestInput, type schemas, type Tenant } from "@treasury/contracts";
import type { z } from "zod";
import type { LedgerDeps } from "./deps.ts";
import { duplicateReference } from "./movements.ts";
import { holdReady, presentHold, presentRelease } from "./present.ts";
import type { HoldRow, WalletRow } from "./rows.ts";
import { loadWallet } from "./wallets.ts";

type CreateHoldBody = z.output<typeof schemas.CreateHoldBody>;
type ListHoldsQuery = z.output<typeof schemas.ListHoldsQuery>;
export type HoldDeps = Pick<LedgerDeps, "wallets" | "participants" | "holds" | "poster" | "now">;

export const KIND_HOLD = "hold";
export const KIND_HOLD_RELEASE = "hold_release";
export const HOLD_PAGE_DEFAULT = 100;
export const DEFAULT_HOLD_REASON = "temporary_hold";

async function holdWallet(deps: Pick<LedgerDeps, "wallets">, tenant: Tenant, body: CreateHoldBody): Promise<WalletRow> {
  if (body.wallet_id !== undefined) {
    const w = await loadWallet(deps, tenant, body.wallet_id);
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
  const w = await deps.wallets.findCreator(tenant, body.participant_id);
  if (w === undefined) throw new DomainError("participant_not_found", `Participant ${body.participant_id} not found`);
  return w;
}

async function loadCreatedHold(deps: Pick<LedgerDeps, "holds">, tenant: Tenant, outcome: PostOutcome, now: Date): Promise<Record<string, unknown>> {
  const created = outcome.result.holds_created[0];
  const hold = created === undefined ? undefined : await deps.holds.find(tenant, created.hold_id);
  if (hold === undefined) throw new Error(`hold of transaction ${outcome.result.transaction_id} not found`);
  return presentHold(hold, now);
}

/**
 * Reserves part of a wallet's available balance.
 * Errors: validation_error, wallet_not_found, participant_not_found, insufficient_balance, wallet_not_active,
 * duplicate_reference_id, idempotency_conflict.
 */
export async function createHold(deps: HoldDeps, tenant: Tenant, body: CreateHoldBody) {
  const wallet = await holdWallet(deps, tenant, body);
  const target = body.release_transfer_to_participant_id;
  if (target !== undefined && !(await deps.participants.exists(tenant, target))) {
    throw new DomainError("participant_not_found", `Participant ${target} not found`);
  }
  const request: PostRequestInput = {
    org_id: tenant.orgId,
    livemode: tenant.livemode,
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
  // auto_release is the ledger's own (the posting request cannot say it): part of what a replay must match.
  const outcome = await deps.poster.post(request, body.auto_release === true ? { autoRelease: [0], hashInput: { request, auto_release: true } } : undefined);
  const hold = await loadCreatedHold(deps, tenant, outcome, deps.now(tenant));
  if (outcome.duplicate) throw duplicateReference(outcome, "hold", hold);
  return { hold };
}

export async function listHolds(deps: Pick<LedgerDeps, "holds" | "now">, tenant: Tenant, query: ListHoldsQuery & { offset?: number | undefined }) {
  const limit = query.limit ?? HOLD_PAGE_DEFAULT;
  const offset = query.offset ?? 0;
  const at = deps.now(tenant);
  const { rows, total } = await deps.holds.list(
    tenant,
    { participantId: query.participant_id, ventureId: query.venture_id, readyOnly: query.ready_only, status: "held", now: at },
    limit,
    offset,
  );
  return { holds: rows.map((h) => presentHold(h, at)), count: rows.length, total, limit, offset };
}

export async function getHoldsSummary(deps: Pick<LedgerDeps, "holds" | "now">, tenant: Tenant) {
  return { summary: await deps.holds.summary(tenant, deps.now(tenant)) };
}

/**
 * Releases a hold: its amount becomes available. With execute_transfer, the hold's release transfer (to
 * release_transfer_to_participant_id) runs in the same transaction; a release never pays out.
 * Errors: hold_not_found, hold_already_released (with the earlier release), hold_not_ready,
 * wallet_not_transferable, participant_not_found, wallet_not_active.
 */
export async function releaseHold(deps: HoldDeps, tenant: Tenant, holdId: string, body: { execute_transfer?: boolean | undefined }) {
  const hold = await deps.holds.find(tenant, holdId);
  if (hold === undefined) throw new DomainError("hold_not_found", `Hold ${holdId} not found`);
  if (hold.status === "released") throw alreadyReleased(hold);
  if (!holdReady(hold, deps.now(tenant))) {
    throw new DomainError("hold_not_ready", `Hold ${holdId} is held until ${hold.hold_until?.toISOString()}`, {
      hint: `Release after hold_until (${hold.hold_until?.toISOString()}); GET /v1/holds?ready_only=true lists releasable holds`,
      extra: { hold_until: hold.hold_until?.toISOString() ?? null },
    });
  }
  const target = hold.release_transfer_to_participant_id;
  const execute = body.execute_transfer === true && target !== null;
  if (execute) await checkReleaseTransfer(deps, tenant, hold.wallet_id, target);
  const request: PostRequestInput = {
    org_id: tenant.orgId,
    livemode: tenant.livemode,
    kind: KIND_HOLD_RELEASE,
    reference_id: hold.id,
    holds_release: [{ hold_id: hold.id, transfer_executed: execute }],
    postings: execute && target !== null ? [{ debit: { wallet_id: hold.wallet_id }, credit: { participant_id: target }, amount: hold.amount }] : [],
    amount: hold.amount,
  };
  let outcome: PostOutcome;
  try {
    outcome = await deps.poster.post(request, { releasedBy: "api" });
  } catch (e) {
    // A concurrent release won: answer what it did.
    if (e instanceof DomainError && (e.code === "hold_already_released" || e.code === "idempotency_conflict")) {
      const now2 = await deps.holds.find(tenant, holdId);
      if (now2 !== undefined && now2.status === "released") throw alreadyReleased(now2);
    }
    throw e;
  }
  const after = await deps.holds.find(tenant, holdId);
  if (after === undefined || after.status !== "released") throw new Error(`hold ${holdId} not released after its release posted`);
  if (outcome.duplicate) throw alreadyReleased(after);
  return { release: presentRelease(after) };
}

/** A release transfer moves money from the hold's wallet to the target's creator wallet: both must permit transfers. */
async function checkReleaseTransfer(deps: Pick<LedgerDeps, "wallets">, tenant: Tenant, walletId: string, target: string): Promise<void> {
  const from = await loadWallet(deps, tenant, walletId);
  const to = await deps.wallets.findCreator(tenant, target);
  if (to === undefined) throw new DomainError("participant_not_found", `Participant ${target} not found`);
  for (const w of [from, to]) {
    if (!w.transferable) throw new DomainError("wallet_not_transferable", `Wallet ${w.id} does not permit transfers`, { extra: { wallet_id: w.id } });
  }
}

function alreadyReleased(hold: HoldRow): DomainError {
  return new DomainError("hold_already_released", `Hold ${hold.id} was already released`, {
    extra: { release: presentRelease(hold), existing_transaction_id: hold.release_transaction_id },
  });
}
