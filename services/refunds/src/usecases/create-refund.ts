/**
 * POST /v1/refunds: refunds a recorded sale (all of what remains, or `amount`), following "Money across
 * services": the intent is recorded first (a `pending` refund with its ledger reference), then executed
 * (usecases/execute-refund.ts). The same client request (same idempotency_key; without one, the same sale
 * reference, amount and external_refund_id) is the same refund: a replay answers it with `idempotent: true`
 * (driving it first when it is still pending), and never moves money again. The same key or external_refund_id
 * with a different request is 409 duplicate_refund_reference with the existing refund.
 *
 * Errors: validation_error, duplicate_refund_reference, original_sale_not_found, sale_already_reversed,
 * sale_already_fully_refunded, refund_amount_exceeds_remaining (with remaining_amount), insufficient_balance
 * (the org's shortfall policy is `refuse`), wallet_not_active, risk_denied, risk_unavailable, service_timeout
 * (outcome unknown: retry).
 */
import { DomainError, newId, type Tenant } from "@treasury/contracts";
import { presentRefund } from "../domain/present.ts";
import type { RefundRow } from "../domain/records.ts";
import { intentHash, intentOf, ledgerReferenceOf, requestKeyOf, type CreateRefundInput, type RefundIntent } from "../domain/refund.ts";
import type { RefundsDeps } from "./deps.ts";
import { executeRefund } from "./execute-refund.ts";

function duplicate(existing: RefundRow): DomainError {
  return new DomainError(
    "duplicate_refund_reference",
    `Refund ${existing.id} was already made for this idempotency_key or external_refund_id with a different request`,
    {
      hint: `GET /v1/refunds/${existing.id} shows it; send a new idempotency_key (and external_refund_id) for another refund`,
      extra: { existing_refund_id: existing.id, existing_transaction_id: existing.transaction_id, refund: presentRefund(existing) },
    },
  );
}

/** Step 1: the pending refund of this request, or the refund it already names. */
async function recordIntent(deps: RefundsDeps, tenant: Tenant, intent: RefundIntent, key: string, hash: string): Promise<{ row: RefundRow; fresh: boolean }> {
  // Insert first: a new refund costs one statement; a replay conflicts and is then read.
  const id = newId("re");
  const inserted = await deps.store.insertRefund(tenant, {
    id,
    request_key: key,
    request_hash: hash,
    idempotency_key: intent.idempotency_key ?? null,
    external_refund_id: intent.external_refund_id ?? null,
    refund_request_id: null,
    sale_reference: intent.sale_reference,
    amount_requested: intent.amount ?? null,
    refund_from: intent.refund_from,
    reason: intent.reason,
    metadata: intent.metadata,
    ledger_reference: ledgerReferenceOf(id, null),
    created_at: deps.now(),
  });
  if (inserted !== undefined) return { row: inserted, fresh: true };
  // This request's key or external id is taken: an earlier (or concurrent) request recorded it.
  const known = await deps.store.findRefundForRequest(tenant, key, intent.external_refund_id);
  if (known === undefined) throw new Error(`refund intent for ${key} neither inserted nor found`);
  return { row: known, fresh: false };
}

/** The refund as it stands after this request drove it, and whether the request was a replay of an earlier one. */
export interface CreatedRefund {
  refund: RefundRow;
  replayed: boolean;
}

/**
 * Risk is asked before the intent is recorded, so a denial leaves nothing behind; keyed by the request's key, so a
 * replay is the same evaluation. A refund of "what remains" is evaluated at the sale's remaining amount; a sale with
 * nothing left (or none) is left to the ledger's refusal.
 */
async function checkRisk(deps: RefundsDeps, tenant: Tenant, intent: RefundIntent, key: string): Promise<void> {
  const amount = intent.amount ?? (await deps.ledger.saleSummary(tenant, intent.sale_reference).catch(() => undefined))?.remaining_amount ?? 0;
  if (amount <= 0) return;
  await deps.risk.check(tenant, { operation: "refund", key: `refund:${key}`, amount });
}

export async function createRefund(deps: RefundsDeps, tenant: Tenant, body: CreateRefundInput): Promise<CreatedRefund> {
  const intent = intentOf(body);
  const hash = intentHash(intent);
  const key = requestKeyOf(intent);
  await checkRisk(deps, tenant, intent, key);
  const { row, fresh } = await recordIntent(deps, tenant, intent, key, hash);
  if (!fresh && row.request_hash !== hash) throw duplicate(row);
  return { refund: await executeRefund(deps, row), replayed: !fresh };
}
