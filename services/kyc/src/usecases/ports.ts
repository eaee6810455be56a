/**
 * Every port the kyc use cases need, and the records they speak: the kyc schema (store/verifications.ts adapts
 * it to PostgreSQL, on the service's pool or an operator's admin connection), the ledger's participants
 * (adapters/ledger.ts), the sealer of personal data and the clock. Use cases import these, never an adapter.
 */
import type { Tenant } from "@treasury/contracts";
import type { NewEvent, Sealer } from "@treasury/service-kit";
import type { KycStatus, Subject, SubmissionStatus } from "../domain/states.ts";

/**
 * Which verification: the organisation's business or one creator, each in one environment (a sandbox submission
 * never changes a live verification).
 */
export type VerificationKey =
  | { subject: "business"; orgId: string; livemode: boolean }
  | { subject: "creator"; orgId: string; livemode: boolean; participantId: string };

export interface SubmissionRow {
  id: string;
  org_id: string;
  livemode: boolean;
  subject: Subject;
  participant_id: string | null;
  status: SubmissionStatus;
  business_type: string | null;
  tax_id_type: string | null;
  tax_id_last4: string | null;
  certify_tax_info: boolean;
  document_types: string[];
  missing_fields: string[];
  pii: string;
  pii_key_id: string;
  submitted_at: Date | null;
  reviewed_at: Date | null;
  rejection_reason: string | null;
  created_at: Date;
}

export interface VerificationRow {
  org_id: string;
  livemode: boolean;
  participant_id: string | null;
  status: KycStatus;
  tax_certified: boolean;
  latest_submission_id: string;
  updated_at: Date;
}

export type NewSubmission = Omit<SubmissionRow, "rejection_reason" | "created_at"> & { request_id: string | null; key_id: string | null };

export interface NewReviewAction {
  org_id: string;
  livemode: boolean;
  submission_id: string;
  subject: Subject;
  participant_id: string | null;
  action: "approve" | "reject" | "suspend" | "auto_approve" | "view";
  from_status: string;
  to_status: string;
  actor: string;
  reason: string | null;
  event_id: string | null;
  created_at: Date;
}

export interface ReviewQueueRow {
  submission_id: string;
  subject: Subject;
  org_id: string;
  livemode: boolean;
  participant_id: string | null;
  status: KycStatus;
  business_type: string | null;
  tax_id_type: string | null;
  tax_id_last4: string | null;
  certify_tax_info: boolean;
  document_types: string[];
  submitted_at: Date | null;
  updated_at: Date;
}

export interface HistoryRow {
  id: string;
  status: SubmissionStatus;
  livemode: boolean;
  submitted_at: Date | null;
  reviewed_at: Date | null;
  rejection_reason: string | null;
  created_at: Date;
}

export interface ReviewActionRow {
  id: string;
  action: string;
  from_status: string;
  to_status: string;
  actor: string;
  reason: string | null;
  event_id: string | null;
  created_at: Date;
}

export interface ListQuery {
  status: KycStatus;
  orgId?: string | undefined;
  subject?: Subject | undefined;
  livemode?: boolean | undefined;
  limit: number;
}

/** What one transaction of the kyc schema does: everything in it commits together or not at all. */
export interface KycTx {
  /**
   * Serialises every write to one verification (first submissions included, when there is no row to lock yet)
   * until the transaction ends. An organisation's two business verifications share one lock: a submission can be
   * the latest of both, and whether it is still the latest of one decides whether it is superseded.
   */
  lockVerification(key: VerificationKey): Promise<void>;
  findVerification(key: VerificationKey): Promise<VerificationRow | undefined>;
  /**
   * The verifications whose latest submission is `s`, the one of its own environment first. A creator's is in its
   * own environment only; a business record a test key sent before verifications were kept per environment can be
   * the latest of both the sandbox and the live verification (the 0002 migration copied it to live).
   */
  verificationsOf(s: SubmissionRow): Promise<VerificationRow[]>;
  /** Points the verification at its latest submission, with that submission's status. */
  saveVerification(key: VerificationKey, v: { status: KycStatus; taxCertified: boolean; latestSubmissionId: string }): Promise<void>;
  insertSubmission(s: NewSubmission): Promise<SubmissionRow>;
  getSubmission(id: string, opts?: { forUpdate?: boolean }): Promise<SubmissionRow | undefined>;
  /**
   * A submission replaced before its decision, once no verification rests on it any more (call it after moving the
   * verification's pointer): one still the latest of the other environment's verification must stay decidable.
   */
  supersede(id: string): Promise<void>;
  setSubmissionDecision(id: string, d: { status: KycStatus; reviewedAt: Date; rejectionReason: string | null }): Promise<SubmissionRow>;
  /** An append-only audit row; answers its id. */
  insertReviewAction(a: NewReviewAction): Promise<string>;
  /** An event, published by the service's relay once the transaction commits; answers its id. */
  writeEvent(e: NewEvent): Promise<string>;
  /** Every submission of one verification, oldest first. */
  submissionHistory(key: VerificationKey): Promise<HistoryRow[]>;
  reviewActionsOf(submissionId: string): Promise<ReviewActionRow[]>;
  /** Submissions sealed with one of `keyIds`, locked for a re-seal; another replica re-sealing skips them. */
  lockStaleSealed(keyIds: readonly string[], limit: number): Promise<{ id: string; pii: string }[]>;
  updateSealed(id: string, pii: string, keyId: string): Promise<void>;
}

/** The kyc schema: reads outside a transaction, and transactions. */
export interface KycStore {
  transaction<T>(fn: (tx: KycTx) => Promise<T>): Promise<T>;
  findVerification(key: VerificationKey): Promise<VerificationRow | undefined>;
  getSubmission(id: string): Promise<SubmissionRow | undefined>;
  /**
   * Verifications in a status (oldest first, as a review queue), their latest submission's clear facts only.
   * `livemode` is the verification's environment: a submission the latest of both of an organisation's business
   * verifications (the 0002 migration) is listed once for each.
   */
  listByStatus(q: ListQuery): Promise<ReviewQueueRow[]>;
}

/** The ledger owns participants. */
export interface ParticipantDirectory {
  /**
   * Resolves when the participant exists in the tenant's org and environment. Errors: participant_not_found,
   * service_unavailable (the ledger did not answer).
   */
  requireParticipant(tenant: Tenant, participantId: string): Promise<void>;
}

/** What the kyc use cases need; service.ts wires them. */
export interface KycDeps {
  store: KycStore;
  /** Absent when no PII keys are configured: then nothing personal can be stored. */
  sealer: Sealer | undefined;
  participants: ParticipantDirectory;
  now: () => Date;
}
