-- KYC schema: business (KYB) and creator (KYC) verifications, every submission kept as history, and the
-- operators' review actions (append-only). Applied by the kit's migrateAll with search_path = kyc.
--
-- Personal data (names, dates of birth, addresses, emails, phones, beneficial owners, free-form metadata) is
-- stored only sealed (AES-256-GCM, libs/service-kit sealed.ts) in `submissions.pii`; the clear columns hold what
-- review and eligibility need and identify nobody: types, statuses, the last four digits of a tax id.

create table submissions (
  id text primary key,
  org_id text not null,
  -- The environment of the key that submitted it.
  livemode boolean not null,
  subject text not null check (subject in ('business', 'creator')),
  participant_id text,
  -- superseded: a later submission of the same verification replaced it before a decision.
  status text not null check (status in ('pending', 'under_review', 'approved', 'rejected', 'suspended', 'superseded')),
  business_type text,
  tax_id_type text check (tax_id_type in ('ssn', 'ein', 'itin')),
  tax_id_last4 text check (tax_id_last4 ~ '^[0-9]{4}$'),
  certify_tax_info boolean not null default false,
  document_types text[] not null default '{}',
  -- What review still needs (field paths); empty for a submission sent to review.
  missing_fields text[] not null default '{}',
  -- Sealed JSON of the personal data, bound to this row's id; pii_key_id names the key that sealed it.
  pii text not null,
  pii_key_id text not null,
  request_id text,
  key_id text,
  submitted_at timestamptz,
  reviewed_at timestamptz,
  rejection_reason text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint submissions_participant_iff_creator check ((subject = 'creator') = (participant_id is not null)),
  constraint submissions_review_has_no_missing check (status = 'pending' or status = 'superseded' or cardinality(missing_fields) = 0)
);
create index submissions_history_idx on submissions (org_id, subject, participant_id, created_at desc);
create index submissions_pii_key_idx on submissions (pii_key_id);

-- The organisation's business verification. One per organisation, whichever environment's key submitted it:
-- a business is verified once, and an organisation has only test keys until its KYB is approved (live keys are
-- unlocked by it). `livemode` records the environment of the latest submission.
create table business_verifications (
  org_id text primary key,
  livemode boolean not null,
  status text not null check (status in ('pending', 'under_review', 'approved', 'rejected', 'suspended')),
  tax_certified boolean not null default false,
  latest_submission_id text not null references submissions (id),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index business_verifications_status_idx on business_verifications (status, updated_at);

-- A creator's verification: per participant, so per organisation and environment like the participant itself.
create table creator_verifications (
  org_id text not null,
  livemode boolean not null,
  participant_id text not null,
  status text not null check (status in ('pending', 'under_review', 'approved', 'rejected', 'suspended')),
  tax_certified boolean not null default false,
  latest_submission_id text not null references submissions (id),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (org_id, livemode, participant_id)
);
create index creator_verifications_status_idx on creator_verifications (status, updated_at);

-- Every decision on a submission, and every time an operator opened its personal data: who, when, why, from
-- which state to which (a view leaves the state as it was and has no event). Never updated or deleted.
create table review_actions (
  id bigint generated always as identity primary key,
  org_id text not null,
  livemode boolean not null,
  submission_id text not null references submissions (id),
  subject text not null check (subject in ('business', 'creator')),
  participant_id text,
  action text not null check (action in ('approve', 'reject', 'suspend', 'auto_approve', 'view')),
  from_status text not null,
  to_status text not null,
  actor text not null check (length(actor) between 1 and 255),
  reason text,
  event_id text,
  created_at timestamptz not null default now(),
  constraint review_actions_decision_has_event check ((action = 'view') = (event_id is null))
);
create index review_actions_submission_idx on review_actions (submission_id, id);

create function review_actions_append_only() returns trigger language plpgsql as $$
begin
  raise exception 'kyc.review_actions is append-only (% refused)', tg_op using errcode = '42501';
end $$;
create trigger review_actions_no_update before update or delete on review_actions
  for each row execute function review_actions_append_only();
create trigger review_actions_no_truncate before truncate on review_actions
  for each statement execute function review_actions_append_only();
