/** Helpers the kyc use cases share around their deps (usecases/ports.ts): the sealer they need, and what binds it. */
import { DomainError } from "@treasury/contracts";
import type { Sealer } from "@treasury/service-kit";
import type { KycDeps } from "./ports.ts";

/** Who submitted: kept with each submission for the audit trail (never personal data). */
export interface Submitter {
  requestId: string;
  keyId: string;
}

export function requireSealer(deps: Pick<KycDeps, "sealer">): Sealer {
  if (deps.sealer === undefined) {
    throw new DomainError("service_unavailable", "Personal data cannot be stored: the kyc service has no encryption keys configured (PII_KEYS)");
  }
  return deps.sealer;
}

/** The associated data that binds a submission's sealed personal data to its row. */
export function piiContext(submissionId: string): string {
  return `kyc.submissions:${submissionId}`;
}
