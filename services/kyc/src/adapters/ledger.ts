/**
 * The ledger owns participants; kyc asks it whether one exists (`getParticipant` on the ledger's internal subject,
 * in the tenant's org and environment) through the kit's ledger port. A participant is never deleted once
 * created, so a found one is remembered for a while; a missing one is asked again next time, so a participant
 * created meanwhile is seen at once.
 */
import { DomainError } from "@treasury/contracts";
import type { LedgerPort } from "@treasury/service-kit";
import type { ParticipantDirectory } from "../usecases/ports.ts";

const FOUND_CACHE_MAX = 10_000;
const FOUND_CACHE_TTL_MS = 5 * 60_000;

/** The ledger's answer as kyc gives it: participant_not_found and service_unavailable to the client, anything else a fault. */
function mapped(e: unknown, participantId: string): unknown {
  if (!(e instanceof DomainError)) return e;
  if (e.code === "participant_not_found") {
    return new DomainError("participant_not_found", `Participant ${participantId} not found`, { hint: "POST /v1/participants creates it" });
  }
  // The ledger is slow or down (the port's retryable service_unavailable): nothing was stored yet, so the client may simply retry.
  if (e.code === "service_unavailable") return e;
  return new Error(`ledger getParticipant failed: ${e.code} ${e.message}`);
}

export function ledgerParticipants(ledger: LedgerPort): ParticipantDirectory {
  const found = new Map<string, number>();
  return {
    async requireParticipant(tenant, participantId) {
      const key = `${tenant.orgId}\u0000${String(tenant.livemode)}\u0000${participantId}`;
      const at = found.get(key);
      if (at !== undefined && Date.now() - at < FOUND_CACHE_TTL_MS) return;
      try {
        await ledger.operation(tenant, "getParticipant", { params: { participant_id: participantId } });
      } catch (e) {
        throw mapped(e, participantId);
      }
      if (found.size >= FOUND_CACHE_MAX) found.clear();
      found.set(key, Date.now());
    },
  };
}
