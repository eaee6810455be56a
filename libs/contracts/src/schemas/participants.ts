/** Participants: the bodies and queries of their operations (docs/api.md, Participants). */
import { z } from "zod";
import { ParticipantId } from "../ids.ts";
import { Percent } from "../money.ts";
import { email, Metadata, obj, pagingInt, str } from "./common.ts";

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
