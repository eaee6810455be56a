-- A submission with the spec's required fields is accepted for review even when a review needs more: what is
-- missing stays listed on it (missing_fields), and an operator cannot approve it. Only a sandbox creator
-- submission is approved with fields still missing (it is approved at once, a document's type standing for a
-- test document).
alter table submissions drop constraint submissions_review_has_no_missing;
alter table submissions add constraint submissions_approved_complete
  check (status <> 'approved' or cardinality(missing_fields) = 0 or (subject = 'creator' and not livemode));
