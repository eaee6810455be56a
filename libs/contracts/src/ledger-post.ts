/**
 * The internal posting RPC, `${prefix}svc.ledger.post`: how every service moves money (the ledger is the only
 * writer of entries; payments, payouts and refunds send it these requests).
 *
 * Reply: `{ ok: true, status: 200, body: PostResult & { duplicate: boolean } }`, or a typed error:
 *   validation_error (malformed request), idempotency_conflict (same kind + reference_id, other request),
 *   insufficient_balance, wallet_not_found, participant_not_found, wallet_not_active, hold_not_found,
 *   hold_already_released; for a refund also original_sale_not_found, sale_already_reversed,
 *   sale_already_fully_refunded, refund_amount_exceeds_remaining (with remaining_amount).
 */
import { z } from "zod";
import { AMOUNT_MAX_CENTS } from "./money.ts";
import { ParticipantId, ReferenceId } from "./ids.ts";

/** Per org+environment system accounts of the ledger. */
export const SYSTEM_ACCOUNT_TYPES = [
  "platform_cash",
  "platform_revenue",
  "processing_fees",
  "sales_tax_payable",
  "payouts_in_transit",
  "refunds_payable",
  "opening_balance_equity",
  "income",
  "expense",
  "accounts_payable",
  "creator_receivable",
  "sandbox_funding",
  /** What customers owe on sent invoices, per invoice (entity_id: the invoice id); invoicing posts it. */
  "accounts_receivable",
] as const;
export type SystemAccountType = (typeof SYSTEM_ACCOUNT_TYPES)[number];

export function ledgerPostSubject(prefix: string): string {
  return `${prefix}svc.ledger.post`;
}

/** Postings, holds and preconditions per request: a bound on the work one database transaction does. */
export const POSTINGS_MAX = 50;
export const HOLDS_PER_POST_MAX = 100;

const Amount = z.number().int().positive().max(AMOUNT_MAX_CENTS);
const Uuid = z.string().regex(/^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/, { message: "must be a UUID" });
const Json = z.record(z.string(), z.unknown());

/** A wallet by id, a participant's creator_earnings wallet, or an org+environment system account. */
export const AccountRef = z.union([
  z.strictObject({ wallet_id: Uuid }),
  z.strictObject({ participant_id: ParticipantId }),
  z.strictObject({ system: z.enum(SYSTEM_ACCOUNT_TYPES), entity_id: z.string().min(1).max(100).optional() }),
]);
export type AccountRef = z.infer<typeof AccountRef>;
/** A reference that must resolve to a wallet (holds and preconditions apply to wallets only). */
export const WalletRef = z.union([z.strictObject({ wallet_id: Uuid }), z.strictObject({ participant_id: ParticipantId })]);
export type WalletRef = z.infer<typeof WalletRef>;

export const Posting = z.strictObject({ debit: AccountRef, credit: AccountRef, amount: Amount });
export type Posting = z.infer<typeof Posting>;

export const HoldCreate = z.strictObject({
  wallet: WalletRef,
  amount: Amount,
  /** Unique per org+environment; defaults to `<kind>:<reference_id>` (`:<n>` after the first). */
  reference_id: ReferenceId.optional(),
  reason_code: z.string().min(1).max(64).default("temporary_hold"),
  description: z.string().max(1000).optional(),
  /** ISO 8601; absent = ready for release at once. */
  hold_until: z
    .string()
    .refine((s) => !Number.isNaN(Date.parse(s)), { message: "must be an ISO 8601 date" })
    .optional(),
  release_transfer_to_participant_id: ParticipantId.optional(),
  metadata: Json.optional(),
});
export type HoldCreate = z.input<typeof HoldCreate>;

const HoldId = z.string().min(1).max(100);
/** A hold to release: its id, or `{hold_id, transfer_executed}` (a bare id means transfer_executed: false). */
export const HoldRelease = z.union([
  HoldId.transform((hold_id) => ({ hold_id, transfer_executed: false })),
  z.strictObject({
    hold_id: HoldId,
    /** Recorded on the release: this transaction's postings are the hold's release transfer. */
    transfer_executed: z.boolean().default(false),
  }),
]);

export const Precondition = z.strictObject({ wallet: WalletRef, available_gte: z.number().int().nonnegative().max(AMOUNT_MAX_CENTS) });

/** The sale this transaction records: its refundable remainder is kept in the ledger. */
export const SaleRecord = z.strictObject({
  sale_reference: ReferenceId,
  participant_id: ParticipantId.optional(),
  gross: z.number().int().nonnegative().max(AMOUNT_MAX_CENTS),
  creator_amount: z.number().int().nonnegative().max(AMOUNT_MAX_CENTS),
  platform_amount: z.number().int().min(-AMOUNT_MAX_CENTS).max(AMOUNT_MAX_CENTS),
  sales_tax: z.number().int().nonnegative().max(AMOUNT_MAX_CENTS).default(0),
  processing_fee: z.number().int().nonnegative().max(AMOUNT_MAX_CENTS).default(0),
  /** Index into holds_create of the hold that holds this sale's creator share, if any. */
  hold_index: z.number().int().nonnegative().optional(),
});

/** How a refund takes a sale's money back (see RefundSpec). */
export const REFUND_FROM = ["both", "platform_only", "creator_only"] as const;
export type RefundFrom = (typeof REFUND_FROM)[number];

/**
 * A refund of a recorded sale: the ledger locks the sale, checks and decrements its refundable remainder and
 * computes the postings itself (the request carries no postings). `both` splits pro rata to the sale's original
 * creator/platform split, cumulatively, so any sequence of partial refunds ends exactly where one full refund
 * would; the creator's part comes from the sale's hold first, then the available balance, and a shortfall is
 * booked to creator_receivable (`shortfall: "receivable"`) or refuses the refund (`"refuse"`:
 * insufficient_balance).
 */
export const RefundSpec = z.strictObject({
  sale_reference: ReferenceId,
  /** Absent: everything that remains refundable (on the side refund_from names). */
  amount: Amount.optional(),
  refund_from: z.enum(REFUND_FROM).default("both"),
  shortfall: z.enum(["receivable", "refuse"]).default("receivable"),
  reason: z.string().max(1000).optional(),
});
export type RefundSpec = z.output<typeof RefundSpec>;

export const PostRequest = z.strictObject({
  org_id: z.string().min(1).max(100),
  livemode: z.boolean(),
  /** Operation kind (wallet_topup, transfer, sale, …): the idempotency key is (org, env, kind, reference_id). */
  kind: z.string().regex(/^[a-z][a-z0-9_]{0,63}$/, { message: "lower_snake_case, at most 64 characters" }),
  reference_id: ReferenceId,
  postings: z.array(Posting).max(POSTINGS_MAX).default([]),
  holds_create: z.array(HoldCreate).max(HOLDS_PER_POST_MAX).default([]),
  holds_release: z.array(HoldRelease).max(HOLDS_PER_POST_MAX).default([]),
  preconditions: z.array(Precondition).max(POSTINGS_MAX).default([]),
  /** The transaction's headline amount; defaults to the sum of its postings. */
  amount: z.number().int().nonnegative().max(AMOUNT_MAX_CENTS).optional(),
  description: z.string().max(1000).optional(),
  metadata: Json.optional(),
  sale: SaleRecord.optional(),
  /** Stored with the result and answered again on a replay. */
  result_extra: Json.optional(),
  /** A refund of a recorded sale; the ledger computes its postings (kind must be `refund`). */
  refund: RefundSpec.optional(),
  /**
   * The accounting date (ISO 8601 date or date-time) when it is not the moment of posting: a backdated expense,
   * an opening balance. Date filters of the listing and the reports use it; the entries' order does not change.
   */
  effective_date: z
    .string()
    .max(40)
    .refine((v) => /^\d{4}-\d{2}-\d{2}([T ].*)?$/.test(v) && !Number.isNaN(Date.parse(v)), { message: "must be an ISO 8601 date or date-time" })
    .optional(),
});
export type PostRequestInput = z.input<typeof PostRequest>;
export type PostRequest = z.output<typeof PostRequest>;

/** A wallet's state after the transaction. */
export interface WalletAfter {
  balance: number;
  held_amount: number;
  available_balance: number;
}

export interface HoldCreated {
  hold_id: string;
  wallet_id: string;
  participant_id: string | null;
  amount: number;
  reference_id: string;
}

export interface HoldReleased {
  hold_id: string;
  release_id: string;
  wallet_id: string;
  amount: number;
  transfer_executed: boolean;
}

/** What a post answers, the first time and (with duplicate: true) on every replay. */
export interface PostResult {
  transaction_id: string;
  kind: string;
  reference_id: string;
  amount: number;
  created_at: string;
  /** Every wallet the transaction touched, keyed by wallet id, as it stood right after the transaction. */
  wallets: Record<string, WalletAfter>;
  holds_created: HoldCreated[];
  holds_released: HoldReleased[];
  extra: Record<string, unknown>;
}

export interface PostOutcome {
  duplicate: boolean;
  result: PostResult;
}
