/**
 * The ledger owns participants; kyc asks it whether one exists (`svc.ledger.internal.getParticipant`, with the caller's
 * org and environment). A participant is never deleted once created, so a found one is remembered for a while;
 * a missing one is asked again next time, so a participant created meanwhile is seen at once.
 */
import { DomainError, internalSubject, type AuthContext } from "@treasury/contracts";
import { rpcCall, type NatsConnection } from "@treasury/service-kit";

export interface ParticipantDirectory {
  /** Resolves when the participant exists in the caller's org and environment; throws participant_not_found otherwise. */
  requireParticipant(auth: AuthContext, participantId: string): Promise<void>;
}

const FOUND_CACHE_MAX = 10_000;
const FOUND_CACHE_TTL_MS = 5 * 60_000;

export function natsParticipants(nc: NatsConnection, prefix: string, timeoutMs: number): ParticipantDirectory {
  const found = new Map<string, number>();
  const subject = internalSubject(prefix, "ledger", "getParticipant");
  return {
    async requireParticipant(auth, participantId) {
      const key = `${auth.org_id}\u0000${String(auth.livemode)}\u0000${participantId}`;
      const at = found.get(key);
      if (at !== undefined && Date.now() - at < FOUND_CACHE_TTL_MS) return;
      const reply = await rpcCall(
        nc,
        subject,
        { auth, params: { participant_id: participantId }, query: {}, body: {}, deadline: Date.now() + timeoutMs },
        { timeoutMs },
      );
      if (!reply.ok) {
        const { code, message } = reply.error;
        if (code === "participant_not_found") {
          throw new DomainError("participant_not_found", `Participant ${participantId} not found`, { hint: "POST /v1/participants creates it" });
        }
        // The ledger is slow or down: nothing was stored yet, so the client may simply retry.
        if (code === "service_timeout" || code === "service_unavailable")
          throw new DomainError("service_unavailable", "The ledger did not answer; retry the request");
        throw new Error(`ledger getParticipant failed: ${code} ${message}`);
      }
      if (found.size >= FOUND_CACHE_MAX) found.clear();
      found.set(key, Date.now());
    },
  };
}
