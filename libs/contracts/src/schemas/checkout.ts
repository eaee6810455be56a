/** Hosted checkout sessions and their sandbox actions (docs/api.md, Checkout). */
import { z } from "zod";
import { ParticipantId, ReferenceId } from "../ids.ts";
import { NonNegativeCents, Percent, PositiveCents } from "../money.ts";
import { bool, email, Metadata, returnUrl, str, StringMetadata } from "./common.ts";

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
