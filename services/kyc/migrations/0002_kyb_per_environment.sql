-- Business verification (KYB) per organisation and environment. Until now one record per organisation took every
-- submission, whichever key sent it, so a test key's new submission replaced an approved verification and stopped
-- the organisation's live payouts until an operator approved again. From now on a sandbox submission updates the
-- sandbox record only and a live one the live record only; `livemode` is the record's environment.
--
-- Existing records: `livemode` held the environment of the latest submission.
--   * livemode = true: a live key's submission; the record stays the live one.
--   * livemode = false: a test key's submission. It stays the sandbox record, and is copied as the live record
--     too: until now it decided live payout eligibility and the live-key unlock (an organisation has only test
--     keys until its KYB is approved), so leaving live without it would stop the live payouts of every
--     organisation onboarded with a test key. Both copies point at the same submission; an operator's decision
--     on it applies to each record that still rests on it (usecases/review.ts).
--
-- The audit trail already records the environment: each kyc.review_actions row has the `livemode` of the record
-- the action concerns.
alter table business_verifications drop constraint business_verifications_pkey;
alter table business_verifications add primary key (org_id, livemode);

insert into business_verifications (org_id, livemode, status, tax_certified, latest_submission_id, created_at, updated_at)
select org_id, true, status, tax_certified, latest_submission_id, created_at, updated_at
from business_verifications
where not livemode;

-- Decisions find the records resting on a submission by its id.
create index business_verifications_latest_idx on business_verifications (latest_submission_id);
