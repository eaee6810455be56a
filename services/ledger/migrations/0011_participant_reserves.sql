-- A participant's reserve (PUT /v1/participants/{id}/reserve): rolling (each new sale holds percent of the
-- creator's share for days, as an auto-release hold with reason `reserve`), fixed (amount_cents of the balance
-- stays unavailable for payouts) or none. A change applies to sales from then on; holds already made keep theirs.
create table participant_reserves (
  org_id text not null,
  livemode boolean not null,
  participant_id text not null,
  reserve_type text not null check (reserve_type in ('rolling', 'fixed', 'none')),
  percent_bps integer check (percent_bps between 0 and 10000),
  days integer check (days between 1 and 365),
  amount_cents bigint check (amount_cents >= 0),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (org_id, livemode, participant_id),
  constraint participant_reserves_shape check (
    (reserve_type = 'rolling' and percent_bps is not null and days is not null and amount_cents is null)
    or (reserve_type = 'fixed' and amount_cents is not null and percent_bps is null and days is null)
    or (reserve_type = 'none' and percent_bps is null and days is null and amount_cents is null))
);
