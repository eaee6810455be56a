/**
 * SQL of the kyc schema: submissions (history, personal data sealed), the verification of each business and
 * creator (pointing at its latest submission) and the append-only review actions. Tables are named with their
 * schema, so the same queries run on the service's pool and on an operator's admin connection.
 */
import { withTx, writeOutbox, type Sql, type Tx } from "@treasury/service-kit";
import type { KycStatus } from "../domain/states.ts";
import type {
  HistoryRow,
  KycStore,
  KycTx,
  ListQuery,
  NewReviewAction,
  NewSubmission,
  ReviewActionRow,
  ReviewQueueRow,
  SubmissionRow,
  VerificationKey,
  VerificationRow,
} from "../usecases/ports.ts";

/** A pool or a transaction. */
type Q = Sql | Tx;

/**
 * Serialises every write to one verification (first submissions included, when there is no row to lock yet)
 * until the transaction ends. An organisation's two business verifications share one lock: a submission can be
 * the latest of both, and whether it is still the latest of one decides whether it is superseded.
 */
async function lockVerification(tx: Tx, key: VerificationKey): Promise<void> {
  const name = key.subject === "business" ? `kyc:business:${key.orgId}` : `kyc:creator:${key.orgId}:${String(key.livemode)}:${key.participantId}`;
  await tx`select pg_advisory_xact_lock(hashtextextended(${name}, 0))`;
}

async function findVerification(q: Q, key: VerificationKey): Promise<VerificationRow | undefined> {
  const rows =
    key.subject === "business"
      ? await q<VerificationRow[]>`
          select org_id, livemode, null::text as participant_id, status, tax_certified, latest_submission_id, updated_at
          from kyc.business_verifications where org_id = ${key.orgId} and livemode = ${key.livemode}`
      : await q<VerificationRow[]>`
          select org_id, livemode, participant_id, status, tax_certified, latest_submission_id, updated_at
          from kyc.creator_verifications
          where org_id = ${key.orgId} and livemode = ${key.livemode} and participant_id = ${key.participantId}`;
  return rows[0];
}

/**
 * The verifications whose latest submission is `s`, the one of its own environment first. A creator's is in its
 * own environment only; a business record a test key sent before verifications were kept per environment can be
 * the latest of both the sandbox and the live verification (the 0002 migration copied it to live).
 */
async function verificationsOf(q: Q, s: SubmissionRow): Promise<VerificationRow[]> {
  if (s.subject === "business") {
    return q<VerificationRow[]>`
      select org_id, livemode, null::text as participant_id, status, tax_certified, latest_submission_id, updated_at
      from kyc.business_verifications where org_id = ${s.org_id} and latest_submission_id = ${s.id}
      order by livemode <> ${s.livemode}`;
  }
  return q<VerificationRow[]>`
    select org_id, livemode, participant_id, status, tax_certified, latest_submission_id, updated_at
    from kyc.creator_verifications
    where org_id = ${s.org_id} and livemode = ${s.livemode} and participant_id = ${s.participant_id} and latest_submission_id = ${s.id}`;
}

/** Points the verification at its latest submission, with that submission's status. */
async function saveVerification(tx: Tx, key: VerificationKey, v: { status: KycStatus; taxCertified: boolean; latestSubmissionId: string }): Promise<void> {
  if (key.subject === "business") {
    await tx`
      insert into kyc.business_verifications (org_id, livemode, status, tax_certified, latest_submission_id)
      values (${key.orgId}, ${key.livemode}, ${v.status}, ${v.taxCertified}, ${v.latestSubmissionId})
      on conflict (org_id, livemode) do update set status = excluded.status, tax_certified = excluded.tax_certified,
        latest_submission_id = excluded.latest_submission_id, updated_at = now()`;
    return;
  }
  await tx`
    insert into kyc.creator_verifications (org_id, livemode, participant_id, status, tax_certified, latest_submission_id)
    values (${key.orgId}, ${key.livemode}, ${key.participantId}, ${v.status}, ${v.taxCertified}, ${v.latestSubmissionId})
    on conflict (org_id, livemode, participant_id) do update set status = excluded.status, tax_certified = excluded.tax_certified,
      latest_submission_id = excluded.latest_submission_id, updated_at = now()`;
}

async function insertSubmission(tx: Tx, s: NewSubmission): Promise<SubmissionRow> {
  const [row] = await tx<SubmissionRow[]>`
    insert into kyc.submissions (id, org_id, livemode, subject, participant_id, status, business_type, tax_id_type, tax_id_last4,
      certify_tax_info, document_types, missing_fields, pii, pii_key_id, request_id, key_id, submitted_at, reviewed_at)
    values (${s.id}, ${s.org_id}, ${s.livemode}, ${s.subject}, ${s.participant_id}, ${s.status}, ${s.business_type}, ${s.tax_id_type},
      ${s.tax_id_last4}, ${s.certify_tax_info}, ${tx.array(s.document_types)}, ${tx.array(s.missing_fields)}, ${s.pii}, ${s.pii_key_id},
      ${s.request_id}, ${s.key_id}, ${s.submitted_at}, ${s.reviewed_at})
    returning *`;
  if (row === undefined) throw new Error("insert into kyc.submissions returned no row");
  return row;
}

async function getSubmission(q: Q, id: string, opts: { forUpdate?: boolean } = {}): Promise<SubmissionRow | undefined> {
  const rows = opts.forUpdate
    ? await q<SubmissionRow[]>`select * from kyc.submissions where id = ${id} for update`
    : await q<SubmissionRow[]>`select * from kyc.submissions where id = ${id}`;
  return rows[0];
}

/**
 * A submission replaced before its decision, once no verification rests on it any more (call it after moving the
 * verification's pointer): one still the latest of the other environment's verification must stay decidable.
 */
async function supersede(tx: Tx, id: string): Promise<void> {
  await tx`
    update kyc.submissions set status = 'superseded', updated_at = now()
    where id = ${id} and status in ('pending', 'under_review')
      and not exists (select 1 from kyc.business_verifications where latest_submission_id = ${id})
      and not exists (select 1 from kyc.creator_verifications where latest_submission_id = ${id})`;
}

async function setSubmissionDecision(tx: Tx, id: string, d: { status: KycStatus; reviewedAt: Date; rejectionReason: string | null }): Promise<SubmissionRow> {
  const [row] = await tx<SubmissionRow[]>`
    update kyc.submissions set status = ${d.status}, reviewed_at = ${d.reviewedAt}, rejection_reason = ${d.rejectionReason}, updated_at = now()
    where id = ${id} returning *`;
  if (row === undefined) throw new Error(`kyc submission ${id} vanished inside its decision`);
  return row;
}

async function insertReviewAction(tx: Tx, a: NewReviewAction): Promise<string> {
  const [row] = await tx<{ id: string }[]>`
    insert into kyc.review_actions (org_id, livemode, submission_id, subject, participant_id, action, from_status, to_status, actor, reason, event_id, created_at)
    values (${a.org_id}, ${a.livemode}, ${a.submission_id}, ${a.subject}, ${a.participant_id}, ${a.action}, ${a.from_status}, ${a.to_status},
      ${a.actor}, ${a.reason}, ${a.event_id}, ${a.created_at})
    returning id::text as id`;
  if (row === undefined) throw new Error("insert into kyc.review_actions returned no row");
  return row.id;
}

/**
 * Verifications in a status (oldest first, as a review queue), their latest submission's clear facts only.
 * `livemode` is the verification's environment: a submission can be the latest of both of an organisation's
 * business verifications (the 0002 migration), and is then listed once for each.
 */
async function listByStatus(q: Q, opts: ListQuery): Promise<ReviewQueueRow[]> {
  const org = opts.orgId ?? null;
  const subject = opts.subject ?? null;
  const livemode = opts.livemode ?? null;
  return q<ReviewQueueRow[]>`
    select s.id as submission_id, s.subject, v.org_id, v.livemode, v.participant_id, v.status, s.business_type, s.tax_id_type, s.tax_id_last4,
      s.certify_tax_info, s.document_types, s.submitted_at, v.updated_at
    from (
      select org_id, livemode, null::text as participant_id, status, latest_submission_id, updated_at from kyc.business_verifications
      union all
      select org_id, livemode, participant_id, status, latest_submission_id, updated_at from kyc.creator_verifications
    ) v join kyc.submissions s on s.id = v.latest_submission_id
    where v.status = ${opts.status} and (${org}::text is null or v.org_id = ${org}) and (${subject}::text is null or s.subject = ${subject})
      and (${livemode}::boolean is null or v.livemode = ${livemode})
    order by coalesce(s.submitted_at, s.created_at), s.id, v.livemode
    limit ${opts.limit}`;
}

/** Submissions sealed with one of `keyIds`, locked for a re-seal; another replica re-sealing skips them. */
async function lockStaleSealed(tx: Tx, keyIds: readonly string[], limit: number): Promise<{ id: string; pii: string }[]> {
  return tx<{ id: string; pii: string }[]>`
    select id, pii from kyc.submissions where pii_key_id = any(${tx.array([...keyIds])}) order by id limit ${limit} for update skip locked`;
}

async function updateSealed(tx: Tx, id: string, pii: string, keyId: string): Promise<void> {
  await tx`update kyc.submissions set pii = ${pii}, pii_key_id = ${keyId} where id = ${id}`;
}

/** Every submission of one verification, oldest first. */
async function submissionHistory(q: Q, key: VerificationKey): Promise<HistoryRow[]> {
  return key.subject === "business"
    ? q<HistoryRow[]>`
        select id, status, livemode, submitted_at, reviewed_at, rejection_reason, created_at from kyc.submissions
        where org_id = ${key.orgId} and subject = 'business' and livemode = ${key.livemode} order by created_at, id`
    : q<HistoryRow[]>`
        select id, status, livemode, submitted_at, reviewed_at, rejection_reason, created_at from kyc.submissions
        where org_id = ${key.orgId} and subject = 'creator' and livemode = ${key.livemode} and participant_id = ${key.participantId}
        order by created_at, id`;
}

async function reviewActionsOf(q: Q, submissionId: string): Promise<ReviewActionRow[]> {
  return q<ReviewActionRow[]>`
    select id::text as id, action, from_status, to_status, actor, reason, event_id, created_at from kyc.review_actions
    where submission_id = ${submissionId} order by id`;
}

function pgKycTx(tx: Tx): KycTx {
  return {
    lockVerification: (key) => lockVerification(tx, key),
    findVerification: (key) => findVerification(tx, key),
    verificationsOf: (s) => verificationsOf(tx, s),
    saveVerification: (key, v) => saveVerification(tx, key, v),
    insertSubmission: (s) => insertSubmission(tx, s),
    getSubmission: (id, opts) => getSubmission(tx, id, opts),
    supersede: (id) => supersede(tx, id),
    setSubmissionDecision: (id, d) => setSubmissionDecision(tx, id, d),
    insertReviewAction: (a) => insertReviewAction(tx, a),
    writeEvent: (e) => writeOutbox(tx, "kyc", e),
    submissionHistory: (key) => submissionHistory(tx, key),
    reviewActionsOf: (submissionId) => reviewActionsOf(tx, submissionId),
    lockStaleSealed: (keyIds, limit) => lockStaleSealed(tx, keyIds, limit),
    updateSealed: (id, pii, keyId) => updateSealed(tx, id, pii, keyId),
  };
}

/** The KycStore port on a pool: the service's own, or an operator's admin connection (the CLI). */
export function pgKycStore(sql: Sql): KycStore {
  return {
    transaction: (fn) => withTx(sql, (tx) => fn(pgKycTx(tx))),
    findVerification: (key) => findVerification(sql, key),
    getSubmission: (id) => getSubmission(sql, id),
    listByStatus: (q) => listByStatus(sql, q),
  };
}
