-- What each money movement of an org does when risk does not answer within its deadline (open: goes ahead
-- unevaluated; closed: refused). A missing row is the operation's default (DEFAULT_RISK_FAIL_MODES in
-- libs/contracts). Every evaluation answer carries the tenant's modes, so callers know them when risk is down.
create table fail_modes (
  org_id text not null,
  livemode boolean not null,
  operation text not null check (operation in ('checkout', 'payout', 'refund', 'transfer', 'withdrawal')),
  mode text not null check (mode in ('open', 'closed')),
  updated_at timestamptz not null default now(),
  primary key (org_id, livemode, operation)
);
