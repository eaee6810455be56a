/**
 * Reserves (wire-decisions §8): what of a creator's earnings stays unavailable for a while. A rolling reserve
 * holds `floor(creator share × percent / 100)` of each new sale (in the sale's own posting: usecases/sale.ts) as
 * an auto-release hold with reason `reserve`, released `days` after the sale by the sale's clock; a fixed reserve
 * keeps `amount_cents` of the balance unavailable for payouts. A change applies to sales from then on.
 */
import { DomainError, percentToBps, tenantOf, type PostRequestInput, type schemas, type Tenant } from "@treasury/contracts";
import type { z } from "zod";
import type { LedgerDeps } from "./deps.ts";
import type { PostHooks } from "./ports.ts";
import type { HoldRow, ReserveRow } from "./rows.ts";

type ReserveBody = z.output<typeof schemas.ReserveBody>;
export type ReserveDeps = Pick<LedgerDeps, "participants" | "reserves">;

/** The reason code of a rolling reserve's holds. */
export const RESERVE_HOLD_REASON = "reserve";
const DAY_MS = 86_400_000;
/** The kind of the postings payouts makes (services/payouts request-payout.ts). */
const PAYOUT_KIND = "payout";

function presentReserve(participantId: string, r: ReserveRow | undefined): Record<string, unknown> {
  return {
    participant_id: participantId,
    type: r?.reserve_type ?? "none",
    percent: r?.percent_bps === null || r?.percent_bps === undefined ? null : r.percent_bps / 100,
    days: r?.days ?? null,
    amount_cents: r?.amount_cents ?? null,
    updated_at: r?.updated_at.toISOString() ?? null,
  };
}

async function ensureParticipant(deps: Pick<LedgerDeps, "participants">, tenant: Tenant, participantId: string): Promise<void> {
  if (!(await deps.participants.exists(tenant, participantId))) throw new DomainError("participant_not_found", `Participant ${participantId} not found`);
}

/** Replaces the participant's reserve. Errors: participant_not_found, validation_error (from decoding). */
export async function putReserve(deps: ReserveDeps, tenant: Tenant, participantId: string, body: ReserveBody) {
  await ensureParticipant(deps, tenant, participantId);
  const row = await deps.reserves.put(tenant, {
    participantId,
    type: body.type,
    percentBps: body.type === "rolling" && body.percent !== undefined ? percentToBps(body.percent) : null,
    days: body.type === "rolling" ? (body.days ?? null) : null,
    amountCents: body.type === "fixed" ? (body.amount_cents ?? null) : null,
  });
  return { reserve: presentReserve(participantId, row) };
}

/** The participant's reserve (`type: "none"` when never set). Errors: participant_not_found. */
export async function getReserve(deps: ReserveDeps, tenant: Tenant, participantId: string) {
  await ensureParticipant(deps, tenant, participantId);
  const [row] = await deps.reserves.find(tenant, [participantId]);
  return { reserve: presentReserve(participantId, row) };
}

/** The hold a rolling reserve makes of a sale's creator share, or undefined when it makes none. */
export function reserveHoldOf(r: ReserveRow | undefined, creatorAmount: number, saleAt: Date): { amount: number; holdUntil: Date } | undefined {
  if (r?.reserve_type !== "rolling" || r.percent_bps === null || r.days === null) return undefined;
  // Exact in integer cents: floor(creator share × percent / 100), the percent in basis points.
  const amount = Math.floor((creatorAmount * r.percent_bps) / 10_000);
  return amount > 0 ? { amount, holdUntil: new Date(saleAt.getTime() + r.days * DAY_MS) } : undefined;
}

/**
 * The reserve figures of a balance snapshot: reserved = the reserve holds still held + the fixed amount; payable =
 * what a payout may take, the available balance (reserve holds are already outside it) less the fixed amount.
 */
export function reserveFigures(r: ReserveRow | undefined, activeHolds: readonly HoldRow[], available: number) {
  const fixed = r?.reserve_type === "fixed" ? (r.amount_cents ?? 0) : 0;
  const held = activeHolds.filter((h) => h.status === "held" && h.hold_reason_code === RESERVE_HOLD_REASON).reduce((s, h) => s + h.amount, 0);
  return { reserved_amount_cents: held + fixed, payable_balance_cents: Math.max(0, available - fixed) };
}

/** The reference of a sale's reserve hold: one per sale, never the sale's own hold. */
export function reserveHoldReference(saleReference: string): string {
  return `reserve:${saleReference}`;
}

/**
 * A sale's request with its rolling reserve's hold on the creator's wallet, in the same posting: an auto-release
 * hold with reason `reserve`. When the sale holds the creator's share itself (`sale.hold_index`), that hold keeps
 * the rest, so the two hold the share once. The reserve is the ledger's, not the caller's: a replay is matched
 * against the request without it (`hashAs`), whatever the reserve says by then.
 */
export function addReserveHold(
  plain: PostRequestInput,
  hold: { amount: number; holdUntil: Date } | undefined,
): { request: PostRequestInput; hooks: PostHooks } | undefined {
  const sale = plain.sale;
  if (hold === undefined || sale?.participant_id === undefined) return undefined;
  const holds = [...(plain.holds_create ?? [])];
  let own = sale.hold_index;
  const ownHold = own === undefined ? undefined : holds[own];
  if (own !== undefined && ownHold !== undefined) {
    if (ownHold.amount > hold.amount) holds[own] = { ...ownHold, amount: ownHold.amount - hold.amount };
    else {
      holds.splice(own, 1);
      own = undefined;
    }
  }
  const reserveHold = {
    wallet: { participant_id: sale.participant_id },
    amount: hold.amount,
    reason_code: RESERVE_HOLD_REASON,
    reference_id: reserveHoldReference(sale.sale_reference),
    description: `Reserve of sale ${sale.sale_reference}`,
    hold_until: hold.holdUntil.toISOString(),
  };
  const { hold_index: _index, ...rest } = sale;
  return {
    request: { ...plain, holds_create: [...holds, reserveHold], sale: own === undefined ? rest : { ...rest, hold_index: own } },
    hooks: { autoRelease: [holds.length], hashAs: plain },
  };
}

/**
 * A sale another service posts (a checkout's sale from payments) with its creator's rolling reserve, as a sale
 * recorded through the API gets it (sale.ts): the reserve holds part of every sale, whoever records it.
 */
export async function withSaleReserve(
  deps: Pick<LedgerDeps, "reserves" | "now">,
  request: PostRequestInput,
): Promise<{ request: PostRequestInput; hooks: PostHooks } | undefined> {
  const sale = request.sale;
  if (sale?.participant_id === undefined || sale.creator_amount <= 0) return undefined;
  const tenant = tenantOf(request);
  const [reserve] = await deps.reserves.find(tenant, [sale.participant_id]);
  return addReserveHold(request, reserveHoldOf(reserve, sale.creator_amount, deps.now(tenant)));
}

/**
 * A payout's request with its creator's fixed reserve kept: the payout's balance precondition on the creator's
 * wallet rises by the reserve's amount, so the floor is judged under the wallet's row lock with the balance
 * itself. The floor is the ledger's, not the caller's: a replay is matched against the request without it.
 */
export async function withPayoutFloor(
  deps: Pick<LedgerDeps, "reserves">,
  request: PostRequestInput,
): Promise<{ request: PostRequestInput; hooks: PostHooks } | undefined> {
  const participantId = payoutParticipant(request);
  if (participantId === undefined) return undefined;
  const [reserve] = await deps.reserves.find(tenantOf(request), [participantId]);
  const floor = reserve?.reserve_type === "fixed" ? (reserve.amount_cents ?? 0) : 0;
  if (floor <= 0 || request.preconditions === undefined || request.preconditions.length === 0) return undefined;
  const preconditions = request.preconditions.map((p) => ({ ...p, available_gte: p.available_gte + floor }));
  return { request: { ...request, preconditions }, hooks: { hashAs: request } };
}

/** The participant a payout posting pays (payouts names it in the metadata), or undefined for any other posting. */
function payoutParticipant(request: PostRequestInput): string | undefined {
  if (request.kind !== PAYOUT_KIND) return undefined;
  const meta = request.metadata;
  const id = typeof meta === "object" && meta !== null && !Array.isArray(meta) ? (meta as Record<string, unknown>)["participant_id"] : undefined;
  return typeof id === "string" ? id : undefined;
}
