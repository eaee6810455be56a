-- Payout schedules (docs/api.md, Payout schedules): one per participant, org and environment. `next_run_at` is
-- when the schedule is next due on the tenant's clock (null for manual); the leader job selects the due ones.
-- A run claims its schedule for a while (`claimed_until`) so two runs never work on it at once; a run that
-- crashes leaves the claim to expire, and the payout's reference (`schedule:<participant>:<period>`) keeps a
-- second attempt from paying twice.
create table payout_schedules (
  org_id text not null,
  livemode boolean not null,
  participant_id text not null,
  interval text not null check (interval in ('manual', 'daily', 'weekly', 'monthly')),
  weekly_anchor text check (weekly_anchor in ('monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday', 'sunday')),
  monthly_anchor int check (monthly_anchor between 1 and 31),
  delay_days int not null default 0 check (delay_days between 0 and 30),
  minimum_amount_cents bigint not null default 0 check (minimum_amount_cents >= 0),
  next_run_at timestamptz,
  claimed_until timestamptz,
  claim_token text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (org_id, livemode, participant_id),
  check ((interval = 'weekly') = (weekly_anchor is not null)),
  check ((interval = 'monthly') = (monthly_anchor is not null)),
  check ((interval = 'manual') = (next_run_at is null))
);
create index payout_schedules_due_idx on payout_schedules (next_run_at) where next_run_at is not null;

-- What each scheduled run did for one period: paid (with its payout) or skipped (with why). One row per period,
-- so a repeated run neither pays nor reports a skip twice.
create table payout_schedule_runs (
  org_id text not null,
  livemode boolean not null,
  participant_id text not null,
  period text not null,
  outcome text not null check (outcome in ('paid', 'skipped')),
  payout_id text,
  amount_cents bigint,
  reason text,
  created_at timestamptz not null default now(),
  primary key (org_id, livemode, participant_id, period),
  check ((outcome = 'paid') = (payout_id is not null)),
  check ((outcome = 'skipped') = (reason is not null))
);
