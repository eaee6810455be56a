-- A payout risk sent to review (a soft policy hit): recorded as `under_review` with the evaluation's id, nothing
-- posted, the money still in the creator's wallet. An operator's decision (`risk.decided`) moves it on:
-- approved → posting (then the usual ledger post and settle), denied → failed with reason risk_denied. A payout
-- that failed from review never posted, so it has no transaction.
alter table payouts drop constraint payouts_status_check;
alter table payouts add constraint payouts_status_check
  check (status in ('posting', 'refused', 'under_review', 'pending', 'processing', 'paid', 'failed'));
alter table payouts add column risk_evaluation_id text;
alter table payouts drop constraint payouts_posted_has_transaction;
alter table payouts add constraint payouts_posted_has_transaction
  check (status in ('posting', 'refused', 'under_review') or transaction_id is not null or (status = 'failed' and risk_evaluation_id is not null));
create index payouts_review_idx on payouts (risk_evaluation_id) where status = 'under_review';
