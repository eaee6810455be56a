-- Ledger part 2: reversals, bills. Forward-only; applied with search_path = ledger.

-- How much of a transaction reversals have taken back (sales keep theirs, with refunds, in sales.refunded_amount),
-- and which transaction a reversal reverses.
alter table transactions add column reversed_amount bigint not null default 0 check (reversed_amount >= 0);
alter table transactions add column reversal_of text references transactions (id);
create index transactions_reversal_of_idx on transactions (reversal_of) where reversal_of is not null;
-- entries (org_id, livemode) served only whole-org scans, which the account and transaction indexes serve as
-- well; each index costs every posting an insertion per entry (ADR 0004, group commit measurements).
drop index entries_org_idx;

-- Bills (record-bill) and what pay-bill has paid of them, decremented under this row's lock.
create table bills (
  id text primary key,
  org_id text not null,
  livemode boolean not null,
  transaction_id text not null unique references transactions (id),
  vendor_name text not null,
  amount bigint not null check (amount > 0),
  paid_amount bigint not null default 0 check (paid_amount >= 0 and paid_amount <= amount),
  due_date timestamptz,
  created_at timestamptz not null default now()
);
create index bills_org_idx on bills (org_id, livemode, created_at);
