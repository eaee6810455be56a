/** What the payouts service reads from the ledger in bulk; not part of the public API. */
import { z } from "zod";
import { ParticipantId } from "../../ids.ts";
import { InternalScope } from "./scope.ts";

/**
 * The balance snapshots of many participants of one org and environment in one request (a payout schedule run
 * reads a whole batch at once instead of one getParticipant per creator). Each snapshot is the one getParticipant
 * answers; a participant the ledger does not know is left out of the answer (`{participants: [...]}`).
 */
export const PARTICIPANT_BALANCES_OPERATION = "internal.participantBalances";
/** Participants one request may name. */
export const PARTICIPANT_BALANCES_MAX = 500;
export const ParticipantBalancesRequest = z.object({
  ...InternalScope,
  participant_ids: z.array(ParticipantId).min(1).max(PARTICIPANT_BALANCES_MAX),
});
