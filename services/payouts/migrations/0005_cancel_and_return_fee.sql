-- A pending live payout whose destination a return has just disabled is cancelled before any file carries it:
-- the `cancel` action gives the money back to the creator's wallet from the in-transit account (its ledger post
-- `payout:<id>:cancel`) and fails the payout with the reason set when it was marked. Only an unfiled payout
-- (`pending`) takes it; a cut and a cancel race on the row's state, and one of them wins.
alter table payouts drop constraint payouts_action_check;
alter table payouts add constraint payouts_action_check check (action in ('settle', 'return', 'cancel'));
alter table payouts drop constraint payouts_action_states;
alter table payouts add constraint payouts_action_states
  check (action is null or (action in ('settle', 'return') and status in ('processing', 'paid')) or (action = 'cancel' and status = 'pending'));

-- The fee a returned payout costs its creator, fixed when the return is marked (so every driver of the return
-- posts the same request): the org's return fee then, at most the returned net amount.
alter table payouts add column return_fee bigint not null default 0 check (return_fee >= 0 and return_fee <= net_amount);

-- Per org and environment: what a returned payout costs the creator (0: nothing). Set by operators
-- (`admin payouts return-fee`), audited in audit_log.
create table org_settings (
  org_id text not null,
  livemode boolean not null,
  return_fee_cents bigint not null default 0 check (return_fee_cents >= 0 and return_fee_cents <= 100000),
  updated_at timestamptz not null default now(),
  primary key (org_id, livemode)
);
