/** record-sale: a sale's split posted in one transaction, with its refundable remainder kept in the ledger. */
import { DomainError, percentToBps, type PostOutcome, type PostRequestInput, type schemas } from "@treasury/contracts";
import type { z } from "zod";
import { DEFAULT_CREATOR_BPS, splitSale, type SaleSplit } from "../domain/sale.ts";
import type { Scope } from "../store/accounts.ts";
import type { Sql } from "../store/db.ts";
import { findParticipant } from "../store/participants.ts";
import type { PostPort } from "./post-request.ts";

type RecordSaleBody = z.output<typeof schemas.RecordSaleBody>;

export const KIND_SALE = "sale";
export const SALE_HOLD_REASON = "sale_hold";

/** The sale's postings: cash in, the creator's share, tax, platform revenue, and the processor's fee. */
export function salePostings(creatorId: string, s: SaleSplit): PostRequestInput["postings"] {
  const revenue = s.gross - s.salesTax - (s.creatorAmount + s.creatorFee) + s.creatorFee;
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
  return {
    transaction_id: outcome.result.transaction_id,
    reference_id: outcome.result.reference_id,
    breakdown: extra.breakdown,
    creator_balance: w?.balance ?? null,
    creator_available_balance: w?.available_balance ?? null,
    hold_id: outcome.result.holds_created[0]?.hold_id ?? null,
    ...(outcome.result.extra["receivable_recovered"] !== undefined ? { receivable_recovered: outcome.result.extra["receivable_recovered"] } : {}),
  };
}

/**
 * Records a sale: creator = floor((gross − sales_tax) × bps / 10000), the platform the rest, the processing fee
 * charged as processing_fee_paid_by says; hold_funds holds the creator's share in the same transaction.
 * Errors: validation_error, participant_not_found, wallet_not_active, duplicate_reference_id (with the sale),
 * idempotency_conflict.
 */
export async function recordSale(sql: Sql, scope: Scope, body: RecordSaleBody, poster: PostPort) {
  const participant = await findParticipant(sql, scope, body.creator_id);
  if (participant === undefined) {
    throw new DomainError("participant_not_found", `Participant ${body.creator_id} not found`, { hint: "POST /v1/participants with participant_id creates it" });
  }
  const bps = body.creator_percent !== undefined ? percentToBps(body.creator_percent) : (participant.default_split_bps ?? DEFAULT_CREATOR_BPS);
  const split = splitSale({
    gross: body.amount,
    salesTax: body.sales_tax ?? 0,
    processingFee: body.processing_fee ?? 0,
    feePaidBy: body.processing_fee_paid_by ?? "platform",
    creatorBps: bps,
  });
  if ("path" in split) throw new DomainError("validation_error", `Invalid body: ${split.path}: ${split.message}`, { details: [split] });
  const hold = body.hold_funds === true && split.creatorAmount > 0;
  const breakdown = {
    gross_amount: split.gross,
    processing_fee: split.processingFee,
    sales_tax: split.salesTax,
    net_amount: split.net,
    creator_amount: split.creatorAmount,
    platform_amount: split.platformAmount,
    creator_percent: bps / 100,
  };
  const request: PostRequestInput = {
    org_id: scope.orgId,
    livemode: scope.livemode,
    kind: KIND_SALE,
    reference_id: body.reference_id,
    amount: split.gross,
    postings: salePostings(body.creator_id, split),
    holds_create: hold ? [{ wallet: { participant_id: body.creator_id }, amount: split.creatorAmount, reason_code: SALE_HOLD_REASON, description: `Sale ${body.reference_id}` }] : [],
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
  const outcome = await poster.post(request);
  const sale = present(outcome, participant.wallet_id);
  if (outcome.duplicate) {
    throw new DomainError("duplicate_reference_id", `A sale with reference_id ${body.reference_id} exists`, {
      extra: { existing_transaction_id: outcome.result.transaction_id, ...sale },
    });
  }
  return sale;
}
