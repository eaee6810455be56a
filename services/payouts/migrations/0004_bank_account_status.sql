-- A bank account the bank says cannot take money (a return such as R02 account closed, R03 no account: the list
-- is UNUSABLE_ACCOUNT_RETURNS in src/domain/nacha-returns.ts) is disabled: live payouts and schedules stop paying
-- into it until the participant sets a new account (PUT bank-account makes it active again). The payout whose
-- return disabled it and the return's reason are kept for operators and for the answers.
alter table bank_accounts
  add column status text not null default 'active' check (status in ('active', 'disabled')),
  add column disabled_reason text,
  add column disabled_at timestamptz,
  add column disabled_by_payout_id text,
  add constraint bank_accounts_disabled_has_reason check ((status = 'disabled') = (disabled_reason is not null and disabled_at is not null));
