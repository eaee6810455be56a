/** Participants: create (idempotent on participant_id), list and get with balance snapshots, one or many. */
import { DomainError, newUuid, percentToBps, type schemas, type Tenant } from "@treasury/contracts";
import type { z } from "zod";
import { CREATOR_EARNINGS_FLAGS } from "../domain/accounts.ts";
import { requestHash } from "../domain/canonical.ts";
import type { LedgerDeps } from "./deps.ts";
import type { TxStore } from "./ports.ts";
import type { HoldRow, ParticipantWithBalance } from "./rows.ts";
import { presentParticipant, presentParticipantBalance } from "./present.ts";
import { reserveFigures } from "./reserves.ts";

type CreateBody = z.output<typeof schemas.CreateParticipantBody>;

/** Tax fields that identify nobody; everything else in tax_info (full tax ids, birth dates…) is dropped. */
const TAX_INFO_KEPT = [
  "tax_id_type",
  "tax_id_last4",
  "country",
  "tax_classification",
  "business_type",
  "entity_type",
  "certified",
  "tax_certified",
  "certified_at",
  "form_type",
  "w9_on_file",
  "w8_on_file",
] as const;

export function sanitizeTaxInfo(taxInfo: Record<string, unknown> | undefined): Record<string, unknown> | null {
  if (taxInfo === undefined) return null;
  const kept: Record<string, unknown> = {};
  for (const k of TAX_INFO_KEPT) if (taxInfo[k] !== undefined) kept[k] = taxInfo[k];
  const full = taxInfo["tax_id"];
  if (kept["tax_id_last4"] === undefined && typeof full === "string") {
    const digits = full.replace(/\D/g, "");
    if (digits.length >= 4) kept["tax_id_last4"] = digits.slice(-4);
  }
  return kept;
}

/**
 * Creates a participant and its creator_earnings wallet in one transaction. A replay with the same fields
 * answers the stored participant (created: false); other fields: participant_already_exists.
 * Errors: participant_already_exists.
 */
export async function createParticipant(
  deps: Pick<LedgerDeps, "transaction">,
  tenant: Tenant,
  body: CreateBody,
): Promise<{ created: boolean; participant: Record<string, unknown> }> {
  return deps.transaction((tx) => createParticipantIn(tx, tenant, body));
}

/**
 * createParticipant inside the caller's database transaction (a sale that names a creator not yet known
 * creates it in the sale's own transaction). Errors: participant_already_exists.
 */
export async function createParticipantIn(
  tx: TxStore,
  tenant: Tenant,
  body: CreateBody,
): Promise<{ created: boolean; walletId: string; participant: Record<string, unknown> }> {
  const fields = {
    user_id: body.user_id ?? null,
    display_name: body.display_name ?? null,
    email: body.email ?? null,
    default_split_bps: body.default_split_percent === undefined ? null : percentToBps(body.default_split_percent),
    tax_info: sanitizeTaxInfo(body.tax_info),
    payout_preferences: body.payout_preferences ?? null,
    metadata: body.metadata ?? {},
  };
  const hash = requestHash(fields);
  const walletId = newUuid();
  // The wallet's unique key (one creator wallet per participant id) is the creation race's arbiter.
  const wallet = await tx.wallets.insert(tenant, {
    id: walletId,
    type: "creator_earnings",
    ownerId: body.participant_id,
    ownerType: "participant",
    participantId: body.participant_id,
    name: body.display_name ?? body.participant_id,
    flags: CREATOR_EARNINGS_FLAGS,
    metadata: {},
  });
  if (wallet !== undefined) {
    const row = await tx.participants.insert(tenant, {
      participantId: body.participant_id,
      walletId,
      userId: fields.user_id,
      displayName: fields.display_name,
      email: fields.email,
      defaultSplitBps: fields.default_split_bps,
      taxInfo: fields.tax_info,
      payoutPreferences: fields.payout_preferences,
      metadata: fields.metadata,
      requestHash: hash,
    });
    if (row === undefined) throw new Error(`participant ${body.participant_id} exists without its creator wallet`);
    return { created: true, walletId, participant: presentParticipant(row, true) };
  }
  const existing = await tx.participants.find(tenant, body.participant_id);
  if (existing === undefined) throw new Error(`creator wallet of ${body.participant_id} exists without its participant`);
  if (existing.request_hash !== hash) {
    throw new DomainError("participant_already_exists", `Participant ${body.participant_id} exists with different fields`, {
      extra: { participant: presentParticipant(existing, false) },
      hint: `GET /v1/participants/${body.participant_id} shows the existing participant; a create never changes one`,
    });
  }
  return { created: false, walletId: existing.wallet_id, participant: presentParticipant(existing, false) };
}

/** Errors: participant_not_found. */
export async function getParticipant(
  deps: Pick<LedgerDeps, "participants" | "holds" | "reserves">,
  tenant: Tenant,
  participantId: string,
): Promise<Record<string, unknown>> {
  const p = await deps.participants.find(tenant, participantId);
  if (p === undefined) throw new DomainError("participant_not_found", `Participant ${participantId} not found`);
  const [holds, [reserve]] = await Promise.all([deps.holds.activeOfWallets(tenant, [p.wallet_id]), deps.reserves.find(tenant, [participantId])]);
  return presentParticipantBalance(p, holds, reserveFigures(reserve, holds, p.balance - p.held_amount));
}

export async function listParticipants(
  deps: Pick<LedgerDeps, "participants" | "holds" | "reserves">,
  tenant: Tenant,
  page: { limit: number; offset: number },
): Promise<{ participants: Record<string, unknown>[]; total: number; limit: number; offset: number }> {
  const { rows, total } = await deps.participants.list(tenant, page.limit, page.offset);
  return { participants: await withBalances(deps, tenant, rows), total, limit: page.limit, offset: page.offset };
}

/**
 * The balance snapshots of many participants at once (the internal read a payout schedule run makes for a whole
 * batch): each as getParticipant answers it, in three statements whatever their number. An unknown id is left out.
 */
export async function participantBalances(
  deps: Pick<LedgerDeps, "participants" | "holds" | "reserves">,
  tenant: Tenant,
  participantIds: readonly string[],
): Promise<Record<string, unknown>[]> {
  return withBalances(deps, tenant, await deps.participants.findMany(tenant, participantIds));
}

/** Participants with their active holds and reserve figures: two statements for the whole page. */
async function withBalances(
  deps: Pick<LedgerDeps, "holds" | "reserves">,
  tenant: Tenant,
  rows: readonly ParticipantWithBalance[],
): Promise<Record<string, unknown>[]> {
  if (rows.length === 0) return [];
  const [holds, reserves] = await Promise.all([
    deps.holds.activeOfWallets(
      tenant,
      rows.map((r) => r.wallet_id),
    ),
    deps.reserves.find(
      tenant,
      rows.map((r) => r.participant_id),
    ),
  ]);
  const holdsOf = new Map<string, HoldRow[]>();
  for (const h of holds) {
    const own = holdsOf.get(h.wallet_id);
    if (own === undefined) holdsOf.set(h.wallet_id, [h]);
    else own.push(h);
  }
  const reserveOf = new Map(reserves.map((r) => [r.participant_id, r]));
  return rows.map((p) => {
    const own = holdsOf.get(p.wallet_id) ?? [];
    return presentParticipantBalance(p, own, reserveFigures(reserveOf.get(p.participant_id), own, p.balance - p.held_amount));
  });
}
