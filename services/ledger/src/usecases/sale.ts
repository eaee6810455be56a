/** record-sale: a sale's split posted in one transaction, with its refundable remainder kept in the ledger. */
import { DomainError, type PostOutcome, type PostRequestInput, type schemas, type Tenant } from "@treasury/contracts";
import { creatorBpsFor, DEFAULT_FEE_PAYER, saleInputProblem, splitSale, type SaleSplit } from "@treasury/money-rules";
import type { z } from "zod";
import type { LedgerDeps } from "./deps.ts";
import { createParticipantIn } from "./participants.ts";
import type { PostHooks } from "./ports.ts";
import { addReserveHold, reserveHoldOf, reserveHoldReference } from "./reserves.ts";

type RecordSaleBody = z.output<typeof schemas.RecordSaleBody>;

export const KIND_SALE = "sale";
export const SALE_HOLD_REASON = "sale_hold";

/** The sale's postings: cash in, the creator's share, tax, platform revenue, and the processor's fee. */
export function salePostings(creatorId: string, s: SaleSplit): PostRequestInput["postings"] {
  // Platform revenue takes everything but the creator's amount and the tax; the whole fee is booked against it.
  const revenue = s.gross - s.salesTax - s.creatorAmount;
  const all = [
    { debit: { system: "platform_cash" as const }, credit: { participant_id: creatorId }, amount: s.creatorAmount },
    { debit: { system: "platform_cash" as const }, credit: { system: "sales_tax_payable" as const }, amount: s.salesTax },
    { debit: { system: "platform_cash" as const }, credit: { system: "platform_revenue" as const }, amount: revenue },
    { debit: { system: "processing_fees" as const }, credit: { system: "platform_cash" as const }, amount: s.processingFee },
  ];
  return all.filter((p) => p.amount > 0);
}

function present(outcome: PostOutcome, walletId: string): Record<string, unknown> {
  const extra = outcome.result.extra as { breakdown?: unknown; hold_id?: unknown };
  const w = outcome.result.wallets[walletId];
  const reserveRef = reserveHoldReference(outcome.result.reference_id);
  const reserveHold = outcome.result.holds_created.find((h) => h.reference_id === reserveRef);
  const saleHold = outcome.result.holds_created.find((h) => h.reference_id !== reserveRef);
  return {
    transaction_id: outcome.result.transaction_id,
    reference_id: outcome.result.reference_id,
    breakdown: extra.breakdown,
    creator_balance: w?.balance ?? null,
    creator_available_balance: w?.available_balance ?? null,
    hold_id: saleHold?.hold_id ?? null,
    ...(reserveHold !== undefined ? { reserve_hold: { hold_id: reserveHold.hold_id, amount_cents: reserveHold.amount } } : {}),
    ...(outcome.result.extra["receivable_recovered"] !== undefined ? { receivable_recovered: outcome.result.extra["receivable_recovered"] } : {}),
  };
}

/**
 * Records a sale, split by the sale arithmetic (@treasury/money-rules): creator = floor((gross − sales_tax) × bps /
 * 10000), the platform the rest, the processing fee charged as processing_fee_paid_by says (the creator's part at
 * most the creator's share, the platform bearing the rest); hold_funds holds the creator's share in the same
 * transaction.
 * A creator_id the ledger does not know yet becomes a participant with the org's default split, created in
 * the sale's own database transaction (integrations record sales before they register creators). Only such a
 * sale runs alone with an in-process extension; a sale for a known creator keeps group commit.
 * Errors: validation_error, wallet_not_active, duplicate_reference_id (with the sale and idempotent: true),
 * idempotency_conflict.
 */
export async function recordSale(deps: Pick<LedgerDeps, "participants" | "poster" | "reserves" | "now">, tenant: Tenant, body: RecordSaleBody) {
  const participant = await deps.participants.find(tenant, body.creator_id);
  // A creator the ledger does not know yet has no reserve.
  const [reserve] = participant === undefined ? [] : await deps.reserves.find(tenant, [body.creator_id]);
  const problem = saleInputProblem(body.amount, body.sales_tax ?? 0, body.processing_fee ?? 0);
  if (problem !== undefined) throw new DomainError("validation_error", `Invalid body: ${problem.path}: ${problem.message}`, { details: [problem] });
  const split = splitSale({
    gross: body.amount,
    salesTax: body.sales_tax ?? 0,
    processingFee: body.processing_fee ?? 0,
    feePaidBy: body.processing_fee_paid_by ?? DEFAULT_FEE_PAYER,
    creatorBps: creatorBpsFor(body.creator_percent, participant?.default_split_bps),
  });
  const plain = saleRequest(tenant, body, split);
  const withReserve = addReserveHold(plain, reserveHoldOf(reserve, split.creatorAmount, deps.now(tenant)));
  let walletId = participant?.wallet_id;
  const outcome =
    participant !== undefined
      ? await deps.poster.post(withReserve?.request ?? plain, withReserve?.hooks)
      : await deps.poster.post(plain, { derive: createCreator(tenant, body.creator_id, (id) => (walletId = id)) });
  walletId ??= (await deps.participants.find(tenant, body.creator_id))?.wallet_id;
  const sale = present(outcome, walletId ?? "");
  if (outcome.duplicate) {
    throw new DomainError("duplicate_reference_id", `A sale with reference_id ${body.reference_id} exists`, {
      extra: { existing_transaction_id: outcome.result.transaction_id, idempotent: true, ...sale },
    });
  }
  return sale;
}

/**
 * The in-process extension of a sale for an unknown creator: creates the participant (and its wallet) inside
 * the posting transaction, before the engine reads and locks wallets, so the sale's postings find it. A
 * participant created meanwhile by someone else is simply used.
 */
function createCreator(tenant: Tenant, creatorId: string, onWallet: (walletId: string) => void): NonNullable<PostHooks["derive"]> {
  return async (tx) => {
    try {
      onWallet((await createParticipantIn(tx, tenant, { participant_id: creatorId })).walletId);
    } catch (e) {
      if (!(e instanceof DomainError && e.code === "participant_already_exists")) throw e;
    }
    return { postings: [] };
  };
}

function saleRequest(tenant: Tenant, body: RecordSaleBody, split: SaleSplit): PostRequestInput {
  const hold = body.hold_funds === true && split.creatorAmount > 0;
  const breakdown = {
    gross_amount: split.gross,
    processing_fee: split.processingFee,
    sales_tax: split.salesTax,
    net_amount: split.net,
    creator_amount: split.creatorAmount,
    platform_amount: split.platformAmount,
    creator_percent: split.creatorBps / 100,
  };
  return {
    org_id: tenant.orgId,
    livemode: tenant.livemode,
    kind: KIND_SALE,
    reference_id: body.reference_id,
    amount: split.gross,
    postings: salePostings(body.creator_id, split),
    holds_create: hold
      ? [{ wallet: { participant_id: body.creator_id }, amount: split.creatorAmount, reason_code: SALE_HOLD_REASON, description: `Sale ${body.reference_id}` }]
      : [],
    sale: {
      sale_reference: body.reference_id,
      participant_id: body.creator_id,
      gross: split.gross,
      creator_amount: split.creatorAmount,
      platform_amount: split.platformAmount,
      sales_tax: split.salesTax,
      processing_fee: split.processingFee,
      ...(hold ? { hold_index: 0 } : {}),
    },
    ...(body.description !== undefined ? { description: body.description } : {}),
    metadata: {
      ...(body.metadata ?? {}),
      ...(body.product_id !== undefined ? { product_id: body.product_id } : {}),
      ...(body.product_name !== undefined ? { product_name: body.product_name } : {}),
      creator_id: body.creator_id,
    },
    result_extra: { breakdown },
  };
}
