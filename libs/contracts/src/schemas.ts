/**
 * Body and query schemas of the public operations (spec + wire-decisions). The gateway validates with these
 * before a request reaches a service; services may re-parse to get typed values.
 * Objects strip unknown fields (clients of the real API send extras); wrong types and missing fields are 400.
 */
import { z } from "zod";
import { NonNegativeCents, Percent, PositiveCents, SignedCents } from "./money.ts";
import { ParticipantId, ReferenceId, Uuid } from "./ids.ts";

const str = (max = 500) => z.string({ error: "must be a string" }).max(max);
const bool = z.boolean({ error: "must be a boolean" });
/** Free-form metadata: an object, at most 50 keys and 16 KiB serialised. */
export const Metadata = z
  .record(z.string(), z.unknown(), { error: "must be an object" })
  .refine((m) => Object.keys(m).length <= 50, { message: "at most 50 keys" })
  .refine((m) => JSON.stringify(m).length <= 16_384, { message: "at most 16 KiB" });
/** String-to-string metadata (checkout sessions). */
export const StringMetadata = z
  .record(z.string(), z.string({ error: "metadata values must be strings" }), { error: "must be an object" })
  .refine((m) => Object.keys(m).length <= 50, { message: "at most 50 keys" })
  .refine((m) => JSON.stringify(m).length <= 16_384, { message: "at most 16 KiB" });
const email = z.string({ error: "must be a string" }).max(320).email({ message: "must be an email address" });
const url = z.string({ error: "must be a string" }).max(2048).url({ message: "must be a URL" });
const isoDate = z.string({ error: "must be a string" }).max(40).refine((s) => !Number.isNaN(Date.parse(s)), { message: "must be an ISO 8601 date" });
const obj = z.record(z.string(), z.unknown(), { error: "must be an object" });

const invalidLimit = { params: { error_code: "invalid_limit" } };
/** A paging number from the query string: integer within [min, max]; out of range → invalid_limit. */
export function pagingInt(min: number, max: number) {
  return z.preprocess(
    (v) => (typeof v === "string" && v.trim() !== "" ? Number(v) : v),
    z
      .number({ error: "must be a number" })
      .refine((n) => Number.isInteger(n) && n >= min && n <= max, { message: `must be an integer from ${min} to ${max}`, ...invalidLimit }),
  );
}
const boolQuery = z.preprocess((v) => (v === "true" || v === "1" ? true : v === "false" || v === "0" ? false : v), bool);

// ---- Participants (§2) ----
export const CreateParticipantBody = z.object({
  participant_id: ParticipantId,
  user_id: str(255).optional(),
  display_name: str(255).optional(),
  email: email.optional(),
  default_split_percent: Percent.optional(),
  tax_info: obj.optional(),
  payout_preferences: obj.optional(),
  metadata: Metadata.optional(),
});
export const ListParticipantsQuery = z.object({ limit: pagingInt(1, 100).optional(), offset: pagingInt(0, 1_000_000_000).optional() });

// ---- KYC (§4) ----
const businessTypes = ["individual", "sole_proprietor", "llc", "corporation", "partnership", "nonprofit"] as const;
const taxIdTypes = ["ssn", "ein", "itin"] as const;
export const DocumentEvidence = z.object({
  type: z.enum(["government_id", "proof_of_address", "w9", "ein_letter", "articles_of_incorporation", "beneficial_owner_id", "processor_verification", "other"]),
  file_name: str(255).optional(),
  url: str(2048).optional(),
  description: str(1000).optional(),
  metadata: Metadata.optional(),
});
export const SubmitBusinessBody = z.object({
  business_type: z.enum(businessTypes),
  legal_name: str(255).min(1),
  primary_contact: obj,
  business_address: obj,
  document_evidence: z.array(DocumentEvidence).max(50),
  tax_id_type: z.enum(taxIdTypes).optional(),
  tax_id_last4: z.string().regex(/^\d{4}$/, { message: "must be 4 digits" }).optional(),
  beneficial_owners: z.array(obj).max(25).optional(),
  submit_for_review: bool.optional(),
  metadata: Metadata.optional(),
});
export const SubmitCreatorBody = z.object({
  legal_name: str(255).min(1),
  email,
  date_of_birth: z.string().regex(/^\d{4}-\d{2}-\d{2}$/, { message: "must be YYYY-MM-DD" }),
  address: obj,
  document_evidence: z.array(DocumentEvidence).max(50),
  display_name: str(255).optional(),
  tax_id_type: z.enum(taxIdTypes).optional(),
  tax_id_last4: z.string().regex(/^\d{4}$/, { message: "must be 4 digits" }).optional(),
  business_type: z.enum(["individual", "sole_proprietor", "llc", "corporation", "partnership"]).optional(),
  certify_tax_info: bool.optional(),
  submit_for_review: bool.optional(),
  metadata: Metadata.optional(),
});

// ---- Wallets (§2) ----
export const WalletType = z.enum(["consumer_credit", "creator_earnings"]);
export const ListWalletsQuery = z.object({
  owner_id: str(255).optional(),
  owner_type: str(50).optional(),
  wallet_type: WalletType.optional(),
  limit: pagingInt(1, 100).optional(),
  offset: pagingInt(0, 1_000_000_000).optional(),
});
export const CreateWalletBody = z.object({
  owner_id: str(255).min(1),
  owner_type: str(50).optional(),
  wallet_type: WalletType.optional(),
  name: str(255).optional(),
  redeemable: bool.optional(),
  transferable: bool.optional(),
  metadata: Metadata.optional(),
});
export const ListEntriesQuery = z.object({ limit: pagingInt(1, 100).optional(), offset: pagingInt(0, 1_000_000_000).optional() });
export const WalletMovementBody = z.object({
  amount: PositiveCents,
  reference_id: ReferenceId,
  description: str(1000).optional(),
  metadata: Metadata.optional(),
});
export const CreateWalletSessionBody = z.object({
  wallet_id: Uuid.optional(),
  owner_id: str(255).optional(),
  external_user_id: str(255).optional(),
  owner_type: z.enum(["user", "consumer", "participant", "creator"]).optional(),
  customer_email: email.optional(),
  permissions: z.array(z.enum(["view_balance", "list_activity", "top_up", "request_refund"])).max(4).optional(),
  success_url: url.optional(),
  cancel_url: url.optional(),
  expires_in_minutes: z.number().int().min(1).max(1440).optional(),
  idempotency_key: ReferenceId.optional(),
  metadata: Metadata.optional(),
});
export const SharedSpendBody = z.object({
  consumer_sub: str(255).min(1),
  amount: PositiveCents,
  reference_id: ReferenceId,
  creator_id: ParticipantId,
  creator_percent: Percent.optional(),
  sales_tax: NonNegativeCents.optional(),
  product_id: str(255).optional(),
  product_name: str(255).optional(),
  metadata: Metadata.optional(),
});
export const SharedSpendReverseBody = z.object({
  sale_transaction_id: str(100).min(1),
  reason: str(1000).optional(),
  metadata: Metadata.optional(),
});

// ---- Holds and transfers (§3) ----
export const ListHoldsQuery = z.object({
  participant_id: ParticipantId.optional(),
  venture_id: str(255).optional(),
  ready_only: boolQuery.optional(),
  limit: pagingInt(1, 1000).optional(),
  offset: pagingInt(0, 1_000_000_000).optional(),
});
export const CreateHoldBody = z
  .object({
    participant_id: ParticipantId.optional(),
    wallet_id: Uuid.optional(),
    amount: PositiveCents,
    reference_id: ReferenceId,
    hold_reason_code: str(64).optional(),
    description: str(1000).optional(),
    hold_until: isoDate.optional(),
    release_transfer_to_participant_id: ParticipantId.optional(),
    metadata: Metadata.optional(),
  })
  .refine((b) => b.participant_id !== undefined || b.wallet_id !== undefined, { message: "participant_id or wallet_id is required", path: ["participant_id"] });
export const ReleaseHoldBody = z.object({ execute_transfer: bool.optional() });
export const TransferBody = z.object({
  amount: PositiveCents,
  reference_id: ReferenceId,
  from_wallet_id: Uuid.optional(),
  to_wallet_id: Uuid.optional(),
  from_participant_id: ParticipantId.optional(),
  to_participant_id: ParticipantId.optional(),
  description: str(1000).optional(),
  metadata: Metadata.optional(),
});

// ---- Checkout (§3) ----
export const CreateCheckoutBody = z.object({
  participant_id: ParticipantId,
  amount: PositiveCents,
  currency: z.literal("USD", { error: "only USD is supported" }).optional(),
  payment_rail: z.enum(["card", "usdc"]).optional(),
  product_id: str(255).optional(),
  product_name: str(255).optional(),
  customer_email: email.optional(),
  customer_id: str(255).optional(),
  buyer_user_id: str(255).optional(),
  purchase_mode: z.literal("direct_funded_wallet").optional(),
  hold_funds: bool.optional(),
  sandbox_checkout_provider: z.enum(["soledgic", "stripe"]).optional(),
  payment_method_id: str(255).optional(),
  success_url: url.optional(),
  cancel_url: url.optional(),
  idempotency_key: ReferenceId.optional(),
  metadata: StringMetadata.optional(),
  sales_tax: NonNegativeCents.optional(),
  creator_percent: Percent.optional(),
});
export const SandboxCheckoutActionBody = z.object({
  idempotency_key: ReferenceId.optional(),
  reason: str(1000).optional(),
  metadata: Metadata.optional(),
});

// ---- Payouts (§4) ----
export const CreatePayoutBody = z.object({
  amount: PositiveCents,
  reference_id: ReferenceId,
  wallet_id: Uuid.optional(),
  participant_id: ParticipantId.optional(),
  reference_type: str(64).optional(),
  description: str(1000).optional(),
  payout_method: str(64).optional(),
  fees: NonNegativeCents.optional(),
  fees_paid_by: z.enum(["platform", "creator"]).optional(),
  metadata: Metadata.optional(),
});

// ---- Receipts (§5) ----
export const GenerateReceiptBody = z.object({
  checkout_id: str(100).optional(),
  sale_transaction_id: str(100).optional(),
  order_id: str(255).optional(),
  external_order_id: str(255).optional(),
  metadata: Metadata.optional(),
});
export const ProofSignatureBody = z.object({
  key_id: str(255).min(1),
  signature: str(4096).min(1),
  public_key_jwk: obj,
  signer_type: z.literal("platform").optional(),
  signer_id: str(255).optional(),
  signed_payload: str(65_536).optional(),
});
export const VerifyReceiptBody = z.object({
  receipt_id: str(100).optional(),
  receipt_hash: str(128).optional(),
  signature: str(4096).optional(),
  public_key_jwk: obj.optional(),
  signed_payload: str(65_536).optional(),
});

// ---- Refunds (§5) ----
const refundFrom = z.enum(["both", "platform_only", "creator_only"]);
export const ListRefundsQuery = z.object({ sale_reference: str(255).optional(), limit: pagingInt(1, 100).optional(), offset: pagingInt(0, 1_000_000_000).optional() });
export const CreateRefundBody = z
  .object({
    original_sale_reference: str(255).min(1).optional(),
    sale_reference: str(255).min(1).optional(),
    reason: str(1000).min(1),
    amount: PositiveCents.optional(),
    refund_from: refundFrom.optional(),
    external_refund_id: str(255).optional(),
    idempotency_key: ReferenceId.optional(),
    metadata: Metadata.optional(),
  })
  .refine((b) => b.original_sale_reference !== undefined || b.sale_reference !== undefined, {
    message: "original_sale_reference is required",
    path: ["original_sale_reference"],
  });
export const CreateRefundRequestBody = z.object({
  sale_reference: str(255).min(1),
  customer_id: str(255).optional(),
  customer_email: email.optional(),
  amount: PositiveCents.optional(),
  reason: str(1000).optional(),
  refund_from: refundFrom.optional(),
  idempotency_key: ReferenceId.optional(),
  metadata: Metadata.optional(),
});
export const ListRefundRequestsQuery = z.object({
  status: str(32).optional(),
  sale_reference: str(255).optional(),
  limit: pagingInt(1, 100).optional(),
  offset: pagingInt(0, 1_000_000_000).optional(),
});
export const RefundRequestActionBody = z.object({ reason: str(1000).optional(), reviewed_by_actor: str(255).optional(), metadata: Metadata.optional() });

// ---- Transactions and accounting (§5) ----
export const GetTransactionsQuery = z.object({
  creator_id: str(100).optional(),
  type: str(64).optional(),
  status: z.enum(["posted", "reversed"]).optional(),
  start_date: isoDate.optional(),
  end_date: isoDate.optional(),
  page: pagingInt(1, 1_000_000).optional(),
  per_page: pagingInt(1, 100).optional(),
  include_entries: boolQuery.optional(),
});
export const RecordSaleBody = z.object({
  reference_id: ReferenceId,
  creator_id: ParticipantId,
  amount: PositiveCents,
  processing_fee: NonNegativeCents.optional(),
  processing_fee_paid_by: z.enum(["platform", "creator", "split"]).optional(),
  creator_percent: Percent.optional(),
  sales_tax: NonNegativeCents.optional(),
  product_id: str(255).optional(),
  product_name: str(255).optional(),
  description: str(1000).optional(),
  hold_funds: bool.optional(),
  metadata: Metadata.optional(),
});
const recordBase = {
  reference_id: ReferenceId,
  amount: PositiveCents,
  description: str(1000).optional(),
  category: str(100).optional(),
  date: isoDate.optional(),
  metadata: Metadata.optional(),
};
export const RecordIncomeBody = z.object({ ...recordBase, customer_name: str(255).optional() });
export const RecordExpenseBody = z.object({ ...recordBase, vendor_name: str(255).optional(), paid_from: str(64).optional() });
export const RecordBillBody = z.object({ ...recordBase, vendor_name: str(255).min(1), due_date: isoDate.optional() });
export const PayBillBody = z.object({ reference_id: ReferenceId, bill_id: str(100).optional(), bill_transaction_id: str(100).optional(), amount: PositiveCents.optional(), description: str(1000).optional(), metadata: Metadata.optional() });
export const RecordAdjustmentBody = z.object({
  reference_id: ReferenceId,
  adjustment_type: z.enum(["correction", "reclassification", "accrual", "deferral", "depreciation", "write_off", "year_end", "opening_balance", "other"]),
  entries: z
    .array(z.object({ account_type: str(64).min(1), entity_id: str(100).optional(), entry_type: z.enum(["debit", "credit"]), amount: PositiveCents }))
    .min(2)
    .max(50),
  reason: str(1000).min(1),
  adjustment_date: isoDate.optional(),
  prepared_by: str(255).optional(),
  metadata: Metadata.optional(),
});
export const RecordOpeningBalanceBody = z.object({
  reference_id: ReferenceId.optional(),
  as_of_date: isoDate,
  balances: z.array(z.object({ account_type: str(64).min(1), entity_id: str(100).optional(), balance: SignedCents })).min(1).max(50),
  metadata: Metadata.optional(),
});
export const RecordTransferBody = z.object({
  reference_id: ReferenceId.optional(),
  from_account_type: str(64).min(1),
  to_account_type: str(64).min(1),
  amount: PositiveCents,
  transfer_type: z.enum(["tax_reserve", "payout_reserve", "owner_draw", "owner_contribution", "operating", "savings", "investment", "other"]),
  description: str(1000).optional(),
  metadata: Metadata.optional(),
});
export const ReverseTransactionBody = z.object({
  transaction_id: str(100).min(1),
  reason: str(1000).min(1),
  partial_amount: PositiveCents.optional(),
  idempotency_key: ReferenceId.optional(),
  metadata: Metadata.optional(),
});
export const GenerateReportBody = z.object({
  report_type: z.enum(["trial_balance", "balance_sheet", "profit_loss"]),
  as_of: isoDate.optional(),
  start_date: isoDate.optional(),
  end_date: isoDate.optional(),
});
export const ImportTransactionsBody = z.object({
  action: z.enum(["parse_preview", "import", "get_templates", "save_template"]),
  format: z.enum(["csv", "ofx", "qfx", "camt053", "bai2", "mt940", "auto"]).optional(),
  data: z.string().max(1_000_000).optional(),
  mapping: obj.optional(),
  template_id: str(100).optional(),
  template: obj.optional(),
  transactions: z.array(obj).max(10_000).optional(),
  account_name: str(255).optional(),
});

// ---- Webhooks (§6) ----
const eventFilter = z.array(str(64)).max(50);
export const WebhooksBody = z.discriminatedUnion("action", [
  z.object({ action: z.literal("list") }),
  z.object({ action: z.literal("create"), url: str(2048).min(1), description: str(1000).optional(), events: eventFilter.optional() }),
  z.object({ action: z.literal("update"), endpoint_id: str(100), url: str(2048).optional(), description: str(1000).optional(), events: eventFilter.optional(), is_active: bool.optional() }),
  z.object({ action: z.literal("delete"), endpoint_id: str(100) }),
  z.object({ action: z.literal("test"), endpoint_id: str(100) }),
  z.object({ action: z.literal("deliveries"), endpoint_id: str(100).optional(), event_type: str(64).optional(), status: z.enum(["pending", "retrying", "delivered", "failed"]).optional(), limit: z.number().int().min(1).max(100).optional() }),
  z.object({ action: z.literal("retry"), delivery_id: str(100) }),
  z.object({ action: z.literal("replay"), delivery_id: str(100).optional(), endpoint_id: str(100).optional(), since: isoDate.optional() }),
  z.object({ action: z.literal("rotate_secret"), endpoint_id: str(100) }),
], { error: "action must be one of list, create, update, delete, test, deliveries, retry, replay, rotate_secret" });
export const SandboxWebhookTestBody = z.object({ idempotency_key: ReferenceId.optional(), event_type: str(64).optional(), payload: obj.optional() });
