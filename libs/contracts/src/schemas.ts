/**
 * Body and query schemas of the public operations (docs/api.md). The gateway validates with these
 * before a request reaches a service; services may re-parse to get typed values.
 * Objects strip unknown fields (clients of the real API send extras); wrong types and missing fields are 400.
 */
import { z } from "zod";
import { NonNegativeCents, Percent, PositiveCents, SignedCents } from "./money.ts";
import { ParticipantId, prefixedId, ReferenceId, Uuid } from "./ids.ts";

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
const isoDate = z
  .string({ error: "must be a string" })
  .max(40)
  .refine((s) => !Number.isNaN(Date.parse(s)), { message: "must be an ISO 8601 date" });
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
export const DOCUMENT_TYPES = [
  "government_id",
  "proof_of_address",
  "w9",
  "ein_letter",
  "articles_of_incorporation",
  "beneficial_owner_id",
  "processor_verification",
  "other",
] as const;
export const KYC_STATUSES = ["pending", "under_review", "approved", "rejected", "suspended"] as const;
export const KycStatus = z.enum(KYC_STATUSES);
export type KycStatus = z.infer<typeof KycStatus>;

/**
 * A full SSN, EIN or ITIN: nine digits, bare or in the usual dashed forms. Only `tax_id_last4` may carry a tax
 * id, so any other string of a KYC body holding one is refused (the platform must never store it).
 */
export const FULL_TAX_ID_RE = /(?<!\d)(?:\d{3}-\d{2}-\d{4}|\d{2}-\d{7}|\d{9})(?!\d)/;
const FULL_TAX_ID_MESSAGE = "must not contain a full tax id (SSN/EIN/ITIN); send its last four digits as tax_id_last4";
const TAX_ID_SCAN_DEPTH_MAX = 32;

/** Adds an issue at each string (value or key) under `value` that holds a full tax id; never echoes the value. */
function refuseFullTaxIds(value: unknown, path: PropertyKey[], ctx: z.RefinementCtx, depth = 0): void {
  if (typeof value === "string") {
    if (FULL_TAX_ID_RE.test(value)) ctx.addIssue({ code: "custom", path, message: FULL_TAX_ID_MESSAGE });
    return;
  }
  if (depth > TAX_ID_SCAN_DEPTH_MAX || value === null || typeof value !== "object") return;
  for (const [k, v] of Object.entries(value)) {
    const at = [...path, Array.isArray(value) ? Number(k) : k];
    if (!Array.isArray(value) && FULL_TAX_ID_RE.test(k)) ctx.addIssue({ code: "custom", path: at, message: FULL_TAX_ID_MESSAGE });
    refuseFullTaxIds(v, at, ctx, depth + 1);
  }
}

/** A calendar date `YYYY-MM-DD` that exists, from 1900-01-01 up to today (UTC). */
const birthDate = z
  .string({ error: "must be a string" })
  .regex(/^\d{4}-\d{2}-\d{2}$/, { message: "must be YYYY-MM-DD" })
  .refine(
    (s) => {
      const d = new Date(`${s}T00:00:00Z`);
      return !Number.isNaN(d.getTime()) && d.toISOString().slice(0, 10) === s;
    },
    { message: "must be a calendar date" },
  )
  .refine((s) => s >= "1900-01-01" && s <= new Date().toISOString().slice(0, 10), { message: "must be a date from 1900-01-01 to today" });
const httpUrl = url.refine((u) => /^https?:\/\//i.test(u), { message: "must be an http(s) URL" });
const phone = z.string({ error: "must be a string" }).regex(/^\+?[0-9 ().-]{5,30}$/, { message: "must be a phone number (digits, spaces, + ( ) . -)" });
const taxIdLast4 = z.string({ error: "must be a string" }).regex(/^\d{4}$/, { message: "must be 4 digits" });

/** A postal address; review needs line1, city, postal_code and country. Unknown keys are dropped. */
export const KycAddress = z.object(
  {
    line1: str(200).min(1).optional(),
    line2: str(200).optional(),
    city: str(100).min(1).optional(),
    state: str(100).optional(),
    postal_code: str(20).min(1).optional(),
    country: z
      .string({ error: "must be a string" })
      .regex(/^[A-Za-z]{2}$/, { message: "must be a 2-letter ISO 3166-1 country code" })
      .optional(),
  },
  { error: "must be an object" },
);
/** Who the platform talks to about a business verification; review needs name and email. */
export const KycContact = z.object(
  { name: str(255).min(1).optional(), email: email.optional(), phone: phone.optional(), title: str(255).optional() },
  { error: "must be an object" },
);
/** A person owning or controlling the business; review needs name and date_of_birth. */
export const BeneficialOwner = z.object(
  {
    name: str(255).min(1).optional(),
    date_of_birth: birthDate.optional(),
    email: email.optional(),
    phone: phone.optional(),
    address: KycAddress.optional(),
    title: str(255).optional(),
    ownership_percent: z
      .number({ error: "must be a number" })
      .min(0, { message: "must be from 0 to 100" })
      .max(100, { message: "must be from 0 to 100" })
      .optional(),
  },
  { error: "must be an object" },
);
/** One piece of evidence: its type, and where the file is (`file_id` or `url`; sandbox accepts the type alone). */
export const DocumentEvidence = z.object(
  {
    type: z.enum(DOCUMENT_TYPES, { error: `must be one of ${DOCUMENT_TYPES.join(", ")}` }),
    file_id: str(255).min(1).optional(),
    url: httpUrl.optional(),
    file_name: str(255).optional(),
    description: str(1000).optional(),
    metadata: Metadata.optional(),
  },
  { error: "must be an object" },
);
export const SubmitBusinessBody = z
  .object({
    business_type: z.enum(businessTypes, { error: `must be one of ${businessTypes.join(", ")}` }),
    legal_name: str(255).min(1),
    primary_contact: KycContact,
    business_address: KycAddress,
    document_evidence: z.array(DocumentEvidence, { error: "must be an array" }).max(50),
    tax_id_type: z.enum(taxIdTypes, { error: `must be one of ${taxIdTypes.join(", ")}` }).optional(),
    tax_id_last4: taxIdLast4.optional(),
    beneficial_owners: z.array(BeneficialOwner, { error: "must be an array" }).max(25).optional(),
    submit_for_review: bool.optional(),
    metadata: Metadata.optional(),
  })
  .superRefine((body, ctx) => refuseFullTaxIds(body, [], ctx));
export const SubmitCreatorBody = z
  .object({
    legal_name: str(255).min(1),
    email,
    date_of_birth: birthDate,
    address: KycAddress,
    document_evidence: z.array(DocumentEvidence, { error: "must be an array" }).max(50),
    display_name: str(255).optional(),
    tax_id_type: z.enum(taxIdTypes, { error: `must be one of ${taxIdTypes.join(", ")}` }).optional(),
    tax_id_last4: taxIdLast4.optional(),
    business_type: z
      .enum(["individual", "sole_proprietor", "llc", "corporation", "partnership"], {
        error: "must be one of individual, sole_proprietor, llc, corporation, partnership",
      })
      .optional(),
    certify_tax_info: bool.optional(),
    submit_for_review: bool.optional(),
    metadata: Metadata.optional(),
  })
  .superRefine((body, ctx) => refuseFullTaxIds(body, [], ctx));

/** The latest submission of a verification, as the KYC answers show it. */
export interface KycSubmissionView {
  id: string;
  status: KycStatus | "superseded";
  submitted_at: string | null;
  reviewed_at: string | null;
  rejection_reason: string | null;
}
/** The `business_kyb` / `creator_kyc` answers (`creator_kyc` also names its participant). */
export interface KycProfileView {
  status: KycStatus;
  missing_fields: string[];
  tax_certified: boolean;
  latest_submission: KycSubmissionView | null;
}

/**
 * Internal read of a creator's verification (request/reply `svc.kyc.getCreatorStatus`, never through the
 * gateway), for payout eligibility: request params `{participant_id}` with the caller's org and environment in
 * the auth context; reply body `{creator_kyc: CreatorKycStatus}`. A participant without a verification is `pending`.
 */
export const CREATOR_KYC_STATUS_OPERATION = "getCreatorStatus";
export const CreatorKycStatus = z.object({ participant_id: z.string(), status: KycStatus, tax_certified: z.boolean() });
export type CreatorKycStatus = z.infer<typeof CreatorKycStatus>;

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
/** https anywhere; http only on the developer's own machine (any port), which payments refuses in live. */
function isReturnUrl(u: string): boolean {
  let parsed: URL;
  try {
    parsed = new URL(u);
  } catch {
    return false;
  }
  if (parsed.protocol === "https:") return true;
  return parsed.protocol === "http:" && (parsed.hostname === "localhost" || parsed.hostname === "127.0.0.1");
}
/**
 * Where a hosted page sends the buyer back (a link and a redirect in the buyer's browser): never `javascript:`,
 * `data:` or another scheme, and never plain http across the network.
 */
const returnUrl = url.refine(isReturnUrl, { message: "must be an https URL (http://localhost or http://127.0.0.1 in sandbox only)" });
export const CreateWalletSessionBody = z.object({
  wallet_id: Uuid.optional(),
  owner_id: str(255).optional(),
  external_user_id: str(255).optional(),
  owner_type: z.enum(["user", "consumer", "participant", "creator"]).optional(),
  customer_email: email.optional(),
  permissions: z
    .array(z.enum(["view_balance", "list_activity", "top_up", "request_refund"]))
    .max(4)
    .optional(),
  success_url: returnUrl.optional(),
  cancel_url: returnUrl.optional(),
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
  success_url: returnUrl.optional(),
  cancel_url: returnUrl.optional(),
  idempotency_key: ReferenceId.optional(),
  metadata: StringMetadata.optional(),
  sales_tax: NonNegativeCents.optional(),
  creator_percent: Percent.optional(),
  /** Who bears the card processor's fee of a live card payment, as record-sale splits it (default platform). */
  processing_fee_paid_by: z.enum(["platform", "creator", "split"]).optional(),
});
export const SandboxCheckoutActionBody = z.object({
  idempotency_key: ReferenceId.optional(),
  reason: str(1000).optional(),
  metadata: Metadata.optional(),
});

// ---- Payouts (§4) ----
export const PAYOUT_STATUSES = ["pending", "processing", "paid", "failed"] as const;
export const PayoutStatus = z.enum(PAYOUT_STATUSES);
export const PayoutId = prefixedId("po");
export const CreatePayoutBody = z
  .object({
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
  })
  .refine((b) => b.participant_id !== undefined || b.wallet_id !== undefined, { message: "participant_id or wallet_id is required", path: ["participant_id"] })
  // A payout whose fees take all of it pays nothing to the bank, whoever pays them.
  .refine((b) => b.fees === undefined || b.fees < b.amount, {
    message: "must be less than amount",
    path: ["fees"],
    params: { error_code: "fees_exceed_amount" },
  });
export const ListPayoutsQuery = z.object({
  participant_id: ParticipantId.optional(),
  status: PayoutStatus.optional(),
  limit: pagingInt(1, 100).optional(),
  offset: pagingInt(0, 1_000_000_000).optional(),
});

/**
 * An ABA routing number: nine digits whose weighted sum (3, 7, 1 repeating) is a multiple of 10. The check
 * catches every single-digit error and most transpositions before a payout reaches the bank.
 */
export function isAbaRoutingNumber(value: string): boolean {
  if (!/^[0-9]{9}$/.test(value)) return false;
  const weights = [3, 7, 1, 3, 7, 1, 3, 7, 1];
  const sum = weights.reduce((acc, w, i) => acc + w * Number(value[i]), 0);
  return sum % 10 === 0;
}
export const BANK_ACCOUNT_TYPES = ["checking", "savings"] as const;
/** Where a creator's live payouts go. The account number is stored sealed and shown only as its last four digits. */
export const BankAccountBody = z.object({
  account_holder_name: z
    .string({ error: "must be a string" })
    .trim()
    .min(1, { message: "must not be empty" })
    .max(100)
    .refine((s) => !/[\u0000-\u001f\u007f]/.test(s), { message: "must not contain control characters" }),
  routing_number: z
    .string({ error: "must be a string of nine digits" })
    .refine((v) => /^[0-9]{9}$/.test(v), { message: "must be nine digits", params: { error_code: "invalid_routing_number" } })
    .refine((v) => !/^[0-9]{9}$/.test(v) || isAbaRoutingNumber(v), {
      message: "fails the ABA routing number checksum",
      params: { error_code: "invalid_routing_number" },
    }),
  account_number: z.string({ error: "must be a string of digits" }).regex(/^[0-9]{4,17}$/, { message: "must be 4–17 digits" }),
  account_type: z.enum(BANK_ACCOUNT_TYPES, { error: "must be checking or savings" }),
});

// ---- Receipts (§5) ----
const TransactionId = prefixedId("txn");
const ReceiptId = prefixedId("rcpt");
/** A SHA-256 digest as 64 lowercase hex characters: receipt_hash, entry_hash, previous_hash. */
export const Sha256Hex = z.string({ error: "must be a string" }).regex(/^[0-9a-f]{64}$/, { message: "must be 64 lowercase hex characters (SHA-256)" });
/** A compact JWS: three base64url segments (the middle one empty when the payload is detached). */
const CompactJws = z
  .string({ error: "must be a string" })
  .max(4096)
  .regex(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+$/, { message: "must be a compact JWS (header.payload.signature, base64url)" });
/** Checkout id or sale transaction id names the sale; order ids are the merchant's labels for it. */
export const GenerateReceiptBody = z.object({
  checkout_id: Uuid.optional(),
  sale_transaction_id: TransactionId.optional(),
  order_id: str(255).min(1).optional(),
  external_order_id: str(255).min(1).optional(),
  metadata: Metadata.optional(),
});
export const ProofSignatureBody = z.object({
  key_id: str(255).min(1),
  signature: CompactJws,
  public_key_jwk: obj,
  signer_type: z.literal("platform", { error: 'must be "platform"' }).optional(),
  signer_id: str(255).min(1).optional(),
  signed_payload: str(65_536).optional(),
});
export const VerifyReceiptBody = z.object({
  receipt_id: ReceiptId.optional(),
  receipt_hash: Sha256Hex.optional(),
  signature: CompactJws.optional(),
  public_key_jwk: obj.optional(),
  signed_payload: str(65_536).optional(),
});

/** Receipt answer (docs/api.md, Receipts). */
export interface ReceiptView {
  id: string;
  status: "issued";
  hosted_url: string;
  checkout_session_id: string | null;
  sale_transaction_id: string;
  order_id: string | null;
  external_order_id: string | null;
  total_amount: number;
  currency: string;
  created_at: string;
  metadata: Record<string, unknown>;
}
export interface ProofSignatureView {
  key_id: string;
  signer_type: "platform";
  signer_id: string | null;
  alg: string;
  public_key_jwk: Record<string, unknown>;
  signature: string;
  signed_payload: string;
  created_at: string;
}
/** Signed ledger proof answer (docs/api.md, Receipts). */
export interface ProofView {
  receipt_id: string | null;
  transaction_id: string;
  canonical_payload: string;
  receipt_hash: string;
  chain: { sequence: number; previous_hash: string; entry_hash: string };
  service_signature: { alg: string; kid: string; jws: string };
  signatures: ProofSignatureView[];
  created_at: string;
}
export interface VerifyReceiptResult {
  valid: boolean;
  checks: {
    receipt_hash: boolean;
    chain: boolean;
    service_signature: boolean;
    counterparty_signatures: Array<{ key_id: string; valid: boolean }>;
  };
}

/**
 * Internal reads the receipts service makes (request/reply, never through the gateway): the ledger's record of
 * one transaction, and the sale behind a checkout session. Errors: transaction_not_found, checkout_session_not_found.
 */
export const TRANSACTION_RECORD_OPERATION = "internal.transactionRecord";
export const CHECKOUT_SALE_OPERATION = "internal.checkoutSale";
const InternalScope = { org_id: z.string().min(1).max(100), livemode: z.boolean() };
export const TransactionRecordRequest = z.object({ ...InternalScope, transaction_id: z.string().min(1).max(100) });
export const CheckoutSaleRequest = z.object({ ...InternalScope, checkout_id: Uuid });

/**
 * The refunds service asks the ledger about a sale before it records a refund request for it: the sale exists in
 * the caller's org and environment, and what remains refundable. Errors: original_sale_not_found.
 */
export const SALE_SUMMARY_OPERATION = "internal.saleSummary";
export const SaleSummaryRequest = z.object({ ...InternalScope, sale_reference: z.string().min(1).max(255) });
export interface SaleSummary {
  sale_reference: string;
  gross: number;
  refunded_amount: number;
  remaining_amount: number;
  reversed: boolean;
}

/** What the gateway forwards for a route with `rawBody`: the body's exact bytes and the signature header. */
export const ProcessorWebhookBody = z.object({ payload_base64: z.string().max(1_000_000), signature: z.string().max(10_000).nullable() });

/**
 * Live card refunds (request/reply between refunds and payments, never through the gateway). Refunds asks payments
 * to refund the card payment behind a sale once the ledger has taken the refund back; payments answers
 * `{processor_refund: null}` when the sale was not paid through the card processor (nothing to call), else the
 * processor refund's state. Payments tells refunds when the processor settles it (succeeded or failed).
 */
export const PROCESSOR_REFUND_OPERATION = "internal.processorRefund";
export const ProcessorRefundRequest = z.object({
  ...InternalScope,
  refund_id: z.string().min(1).max(100),
  sale_reference: z.string().min(1).max(255),
  amount: PositiveCents,
});
export const PROCESSOR_REFUND_STATUSES = ["pending", "succeeded", "failed"] as const;
export interface ProcessorRefundState {
  processor: "stripe";
  processor_refund_id: string | null;
  status: (typeof PROCESSOR_REFUND_STATUSES)[number];
  failure_reason: string | null;
}
export const PROCESSOR_REFUND_SETTLED_OPERATION = "internal.processorRefundSettled";
export const ProcessorRefundSettled = z.object({
  ...InternalScope,
  refund_id: z.string().min(1).max(100),
  processor_refund_id: z.string().min(1).max(255),
  status: z.enum(["succeeded", "failed"]),
  failure_reason: z.string().max(1000).nullable(),
});
/** One entry as the ledger wrote it (balance_after is left out: a receipt must not reveal a wallet's balance). */
export interface TransactionRecordEntry {
  id: string;
  account_id: string;
  account_type: string;
  entity_id: string | null;
  entry_type: "debit" | "credit";
  amount: number;
}
/** A transaction as the ledger recorded it: only facts that never change after posting. */
export interface TransactionRecord {
  id: string;
  org_id: string;
  livemode: boolean;
  transaction_type: string;
  reference_id: string;
  amount: number;
  currency: string;
  description: string | null;
  metadata: Record<string, unknown>;
  reversal_of: string | null;
  effective_at: string | null;
  created_at: string;
  entries: TransactionRecordEntry[];
  /** Present when the transaction records a sale. */
  sale: {
    sale_reference: string;
    participant_id: string | null;
    participant_display_name: string | null;
    gross: number;
    sales_tax: number;
  } | null;
}
/** What receipts need of a checkout session. */
export interface CheckoutSale {
  id: string;
  status: "pending" | "completing" | "completed" | "failed";
  sale_transaction_id: string | null;
  merchant_name: string;
  product_name: string | null;
  amount: number;
  currency: string;
}

// ---- Refunds (§5) ----
export const REFUND_FROM_VALUES = ["both", "platform_only", "creator_only"] as const;
const refundFrom = z.enum(REFUND_FROM_VALUES, { error: "must be one of both, platform_only, creator_only" });
export const REFUND_STATUSES = ["pending", "completed", "failed"] as const;
export const REFUND_REQUEST_STATUSES = ["created", "processing", "completed", "rejected", "cancelled", "failed"] as const;
export type RefundRequestStatus = (typeof REFUND_REQUEST_STATUSES)[number];
/** A sale reference: checkout sales are `checkout:<session id>`, record-sale sales the client's reference_id. */
const saleReference = ReferenceId;
export const ListRefundsQuery = z.object({
  sale_reference: saleReference.optional(),
  limit: pagingInt(1, 100).optional(),
  offset: pagingInt(0, 1_000_000_000).optional(),
});
export const CreateRefundBody = z
  .object({
    original_sale_reference: saleReference.optional(),
    sale_reference: saleReference.optional(),
    reason: str(1000).min(1, { message: "must not be empty" }),
    amount: PositiveCents.optional(),
    refund_from: refundFrom.optional(),
    external_refund_id: str(255).min(1, { message: "must not be empty" }).optional(),
    idempotency_key: ReferenceId.optional(),
    metadata: Metadata.optional(),
  })
  .refine((b) => b.original_sale_reference !== undefined || b.sale_reference !== undefined, {
    message: "original_sale_reference is required",
    path: ["original_sale_reference"],
  })
  .refine((b) => b.original_sale_reference === undefined || b.sale_reference === undefined || b.original_sale_reference === b.sale_reference, {
    message: "must equal sale_reference when both are given",
    path: ["original_sale_reference"],
  });
export const CreateRefundRequestBody = z.object({
  sale_reference: saleReference,
  customer_id: str(255).min(1, { message: "must not be empty" }).optional(),
  customer_email: email.optional(),
  amount: PositiveCents.optional(),
  reason: str(1000).optional(),
  refund_from: refundFrom.optional(),
  idempotency_key: ReferenceId.optional(),
  metadata: Metadata.optional(),
});
export const ListRefundRequestsQuery = z.object({
  status: z.enum(REFUND_REQUEST_STATUSES, { error: `must be one of ${REFUND_REQUEST_STATUSES.join(", ")}` }).optional(),
  sale_reference: saleReference.optional(),
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
export const PayBillBody = z.object({
  reference_id: ReferenceId,
  bill_id: str(100).optional(),
  bill_transaction_id: str(100).optional(),
  amount: PositiveCents.optional(),
  description: str(1000).optional(),
  metadata: Metadata.optional(),
});
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
  balances: z
    .array(z.object({ account_type: str(64).min(1), entity_id: str(100).optional(), balance: SignedCents }))
    .min(1)
    .max(50),
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
export const REPORT_TYPES = ["trial_balance", "balance_sheet", "profit_loss", "transaction_history"] as const;
/** transaction_history pages its transactions with their entries (page/per_page, defaults 1/50, at most 100 a page). */
export const GenerateReportBody = z.object({
  report_type: z.enum(REPORT_TYPES),
  as_of: isoDate.optional(),
  start_date: isoDate.optional(),
  end_date: isoDate.optional(),
  page: z.number({ error: "must be a number" }).int().min(1).max(1_000_000).optional(),
  per_page: z.number({ error: "must be a number" }).int().min(1).max(100).optional(),
});
/**
 * The report reads (GET /v1/trial-balance, /v1/balance-sheet, /v1/profit-loss): the same figures as
 * generate-report of that type. `as_of_date` (or `as_of`) is the cut-off of the trial balance and balance
 * sheet; profit and loss covers start_date..end_date. A bare date includes that whole day (UTC).
 */
export const ReportQuery = z.object({
  as_of_date: isoDate.optional(),
  as_of: isoDate.optional(),
  start_date: isoDate.optional(),
  end_date: isoDate.optional(),
});
export const IMPORT_ACTIONS = ["parse_preview", "import", "get_templates", "save_template"] as const;
export const IMPORT_FORMATS = ["csv", "ofx", "qfx", "camt053", "bai2", "mt940", "auto"] as const;
/**
 * import-transactions. `data` is the statement's text; with `data_encoding: "base64"` it is the file's bytes in
 * base64 (for files that are not UTF-8, e.g. a latin1 CSV, whose bytes must reach the reader unchanged). CSV
 * needs a `mapping` or a saved `template_id`; `save_template` takes `template: {name, mapping, description}`
 * (a template of the same name is replaced). `transactions` imports lines already read by the client (each
 * `{date, amount (signed minor units), currency, description, reference, bank_account}`) instead of `data`.
 * `preview_limit` bounds the lines parse_preview returns per statement (default and maximum 1000; the counts
 * and totals always cover every line).
 */
export const ImportTransactionsBody = z.object({
  action: z.enum(IMPORT_ACTIONS, { error: `action must be one of ${IMPORT_ACTIONS.join(", ")}` }),
  format: z.enum(IMPORT_FORMATS, { error: `format must be one of ${IMPORT_FORMATS.join(", ")}` }).optional(),
  data: z
    .string({ error: "must be a string" })
    .max(1024 * 1024)
    .optional(),
  data_encoding: z.enum(["text", "base64"], { error: "must be text or base64" }).optional(),
  mapping: obj.optional(),
  template_id: str(100).optional(),
  template: z
    .object(
      { name: str(100).min(1), mapping: obj, format: z.literal("csv", { error: "templates are for csv" }).optional(), description: str(1000).optional() },
      { error: "must be an object" },
    )
    .optional(),
  transactions: z.array(obj).max(10_000).optional(),
  account_name: str(255).optional(),
  preview_limit: z.number({ error: "must be a number" }).int().min(0).max(1000).optional(),
});

// ---- Reconciliation ----
/**
 * Auto-match: unmatched bank lines booked in start_date..end_date (all when absent) against unmatched ledger
 * transactions that moved platform cash within date_window_days (default 3) of them.
 */
export const AutoMatchBody = z.object({
  start_date: isoDate.optional(),
  end_date: isoDate.optional(),
  bank_account: str(100).optional(),
  date_window_days: z.number({ error: "must be a number" }).int().min(0).max(31).optional(),
  min_confidence: z.number({ error: "must be a number" }).min(0.5).max(1).optional(),
});
export const ManualMatchBody = z.object({
  bank_line_id: str(100).min(1),
  transaction_id: str(100).min(1),
  note: str(1000).optional(),
});
export const UnmatchedQuery = z.object({
  bank_account: str(100).optional(),
  start_date: isoDate.optional(),
  end_date: isoDate.optional(),
  limit: pagingInt(1, 100).optional(),
  offset: pagingInt(0, 1_000_000_000).optional(),
});

// ---- Webhooks (§6) ----
const eventFilter = z.array(str(64)).max(50);
export const WebhooksBody = z.discriminatedUnion(
  "action",
  [
    z.object({ action: z.literal("list") }),
    z.object({ action: z.literal("create"), url: str(2048).min(1), description: str(1000).optional(), events: eventFilter.optional() }),
    z.object({
      action: z.literal("update"),
      endpoint_id: str(100),
      url: str(2048).optional(),
      description: str(1000).optional(),
      events: eventFilter.optional(),
      is_active: bool.optional(),
    }),
    z.object({ action: z.literal("delete"), endpoint_id: str(100) }),
    z.object({ action: z.literal("test"), endpoint_id: str(100) }),
    z.object({
      action: z.literal("deliveries"),
      endpoint_id: str(100).optional(),
      event_type: str(64).optional(),
      status: z.enum(["pending", "retrying", "delivered", "failed"]).optional(),
      limit: z.number().int().min(1).max(100).optional(),
    }),
    z.object({ action: z.literal("retry"), delivery_id: str(100) }),
    z.object({ action: z.literal("replay"), delivery_id: str(100).optional(), endpoint_id: str(100).optional(), since: isoDate.optional() }),
    z.object({ action: z.literal("rotate_secret"), endpoint_id: str(100) }),
  ],
  { error: "action must be one of list, create, update, delete, test, deliveries, retry, replay, rotate_secret" },
);
export const SandboxWebhookTestBody = z.object({ idempotency_key: ReferenceId.optional(), event_type: str(64).optional(), payload: obj.optional() });
