/** What the kyc use cases need: the pool, the sealer for personal data, the ledger's participants, the clock. */
import { DomainError, type AuthContext } from "@treasury/contracts";
import type { Sealer, Sql } from "@treasury/service-kit";
import type { ParticipantDirectory } from "../adapters/ledger.ts";

export interface KycDeps {
  sql: Sql;
  /** Absent when no PII keys are configured: then nothing personal can be stored. */
  sealer: Sealer | undefined;
  participants: ParticipantDirectory;
  now: () => Date;
}

export type { AuthContext };

/** Who submitted: kept with each submission for the audit trail (never personal data). */
export interface Submitter {
  requestId: string;
  keyId: string;
}

export function requireSealer(deps: KycDeps): Sealer {
  if (deps.sealer === undefined) {
    throw new DomainError("service_unavailable", "Personal data cannot be stored: the kyc service has no encryption keys configured (PII_KEYS)");
  }
  return deps.sealer;
}

/** The associated data that binds a submission's sealed personal data to its row. */
export function piiContext(submissionId: string): string {
  return `kyc.submissions:${submissionId}`;
}
