/**
 * Wallets, their movements, wallet sessions and shared spend (docs/api.md, Wallets; Wallet sessions and shared
 * spend).
 */
import { z } from "zod";
import { ParticipantId, ReferenceId, Uuid } from "../ids.ts";
import { NonNegativeCents, Percent, PositiveCents } from "../money.ts";
import { bool, email, Metadata, pagingInt, returnUrl, str } from "./common.ts";

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
