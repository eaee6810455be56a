/** Payouts and the bank account a creator's live payouts go to (docs/api.md, Payouts). */
import { z } from "zod";
import { ParticipantId, prefixedId, ReferenceId, Uuid } from "../ids.ts";
import { NonNegativeCents, PositiveCents } from "../money.ts";
import { Metadata, pagingInt, str } from "./common.ts";

export const PAYOUT_STATUSES = ["pending", "under_review", "processing", "paid", "failed"] as const;
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
