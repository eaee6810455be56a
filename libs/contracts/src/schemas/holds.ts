/** Holds and transfers between wallets (docs/api.md, Holds and transfers). */
import { z } from "zod";
import { ParticipantId, ReferenceId, Uuid } from "../ids.ts";
import { PositiveCents } from "../money.ts";
import { bool, boolQuery, isoDate, Metadata, pagingInt, str } from "./common.ts";

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
    /** Released by the ledger itself at hold_until (`hold.released` with `released_by: "schedule"`). */
    auto_release: bool.optional(),
  })
  .refine((b) => b.participant_id !== undefined || b.wallet_id !== undefined, { message: "participant_id or wallet_id is required", path: ["participant_id"] })
  .refine((b) => b.auto_release !== true || b.hold_until !== undefined, { message: "auto_release needs hold_until", path: ["hold_until"] });
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
