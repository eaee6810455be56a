/**
 * The `business_kyb` / `creator_kyc` answers: status, what review still needs, the tax certification and the
 * latest submission. They never show personal data. Pure functions.
 */
import type { schemas } from "@treasury/contracts";
import type { SubmissionStatus } from "./states.ts";

interface SubmissionFacts {
  id: string;
  status: SubmissionStatus;
  missing_fields: string[];
  submitted_at: Date | null;
  reviewed_at: Date | null;
  rejection_reason: string | null;
}

interface VerificationFacts {
  status: schemas.KycStatus;
  tax_certified: boolean;
}

const iso = (d: Date | null): string | null => (d === null ? null : d.toISOString());

export function presentSubmission(s: SubmissionFacts): schemas.KycSubmissionView {
  return { id: s.id, status: s.status, submitted_at: iso(s.submitted_at), reviewed_at: iso(s.reviewed_at), rejection_reason: s.rejection_reason };
}

/** A verification, or (without one) the empty profile: pending, everything missing, nothing certified. */
export function presentVerification(
  v: VerificationFacts | undefined,
  latest: SubmissionFacts | undefined,
  emptyMissing: readonly string[],
): schemas.KycProfileView {
  if (v === undefined || latest === undefined) return { status: "pending", missing_fields: [...emptyMissing], tax_certified: false, latest_submission: null };
  return { status: v.status, missing_fields: latest.missing_fields, tax_certified: v.tax_certified, latest_submission: presentSubmission(latest) };
}
