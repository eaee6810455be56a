-- Ledger schema: accounts (system accounts and wallets), participants, transactions, entries, holds, sales.
-- Applied by the kit's migrateAll with search_path = ledger. Every table carries org_id and livemode, and every
-- unique key includes both: sandbox and live, and two orgs, never see each other's rows.

create table accounts (
  id uuid primary key,
  org_id text not null,
  livemode boolean not null,
  account_type text not null check (account_type in (
    'platform_cash', 'platform_revenue', 'processing_fees', 'sales_tax_payable', 'payouts_in_transit',
    'refunds_payable', 'opening_balance_equity', 'income', 'expense', 'accounts_payable', 'creator_receivable',
    'sandbox_funding', 'creator_earnings', 'consumer_credit')),
  -- Wallets hold one exact balance row; system accounts keep their running balance in account_balance_shards.
  is_wallet boolean generated always as (account_type in ('creator_earnings', 'consumer_credit')) stored,
  -- Which side increases the balance: assets and expenses are debit-normal, the rest credit-normal.
  normal_side text not null check (normal_side in ('debit', 'credit')),
  -- For system accounts an optional sub-ledger key (e.g. a creator for creator_receivable); '' when none.
  entity_id text not null default '',
  name text not null,
  balance bigint not null default 0,
  held_amount bigint not null default 0,
  -- Wallet columns (null / defaults on system accounts).
  owner_id text,
  owner_type text,
  participant_id text,
  status text not null default 'active' check (status in ('active', 'frozen', 'closed')),
  redeemable boolean not null default false,
  transferable boolean not null default false,
  topup_supported boolean not null default false,
  payout_supported boolean not null default false,
  metadata jsonb not null default '{}',
  created_at timestamptz not null default now(),
  -- System accounts never use the row balance (it would become the hot row the shards exist to avoid).
  constraint accounts_system_row_balance_unused check (is_wallet or (balance = 0 and held_amount = 0)),
  constraint accounts_wallet_never_negative check (
    not is_wallet or (balance >= 0 and held_amount >= 0 and held_amount <= balance)),
  constraint accounts_wallet_owner check (not is_wallet or owner_id is not null)
);
create unique index accounts_system_uq on accounts (org_id, livemode, account_type, entity_id) where not is_wallet;
create unique index accounts_creator_wallet_uq on accounts (org_id, livemode, participant_id)
  where account_type = 'creator_earnings';
create unique index accounts_consumer_wallet_uq on accounts (org_id, livemode, owner_id)
  where account_type = 'consumer_credit';
create index accounts_wallet_list_idx on accounts (org_id, livemode, created_at, id) where is_wallet;

-- Running balances of system accounts, split over N rows so concurrent postings rarely wait for each other.
-- The account's balance is the sum of its shards (see docs/adr/0004-hot-accounts.md).
create table account_balance_shards (
  account_id uuid not null references accounts (id),
  shard smallint not null check (shard >= 0),
  balance bigint not null default 0,
  primary key (account_id, shard)
);

create table participants (
  org_id text not null,
  livemode boolean not null,
  participant_id text not null,
  -- The participant's ledger account: its creator_earnings wallet (the same uuid as wallet_id).
  account_id uuid not null references accounts (id),
  wallet_id uuid not null references accounts (id),
  user_id text,
  display_name text,
  email text,
  default_split_bps integer check (default_split_bps between 0 and 10000),
  -- Only non-identifying tax fields (tax_id_type, tax_id_last4, …) are ever stored.
  tax_info jsonb,
  payout_preferences jsonb,
  metadata jsonb not null default '{}',
  -- sha256 of the canonical create fields: a replay with other fields is participant_already_exists.
  request_hash text not null,
  created_at timestamptz not null default now(),
  primary key (org_id, livemode, participant_id)
);
create index participants_list_idx on participants (org_id, livemode, created_at, participant_id);

create table transactions (
  id text primary key,
  org_id text not null,
  livemode boolean not null,
  kind text not null,
  reference_id text not null,
  -- sha256 of the canonical posting request; the same key with another request is idempotency_conflict.
  request_hash text not null,
  -- What the first request was answered; a replay answers it again.
  result jsonb not null default '{}',
  status text not null default 'posted' check (status in ('posted', 'reversed')),
  amount bigint not null check (amount >= 0),
  description text,
  metadata jsonb not null default '{}',
  created_at timestamptz not null default now(),
  constraint transactions_reference_uq unique (org_id, livemode, kind, reference_id)
);
create index transactions_list_idx on transactions (org_id, livemode, created_at desc, id);

create table entries (
  seq bigint generated always as identity primary key,
  id text not null unique,
  org_id text not null,
  livemode boolean not null,
  transaction_id text not null references transactions (id),
  account_id uuid not null references accounts (id),
  entry_type text not null check (entry_type in ('debit', 'credit')),
  amount bigint not null check (amount > 0),
  -- Exact for wallets. Null for sharded system accounts: their balance is only defined as a sum of shards.
  balance_after bigint,
  created_at timestamptz not null default now()
);
create index entries_account_idx on entries (account_id, seq desc);
create index entries_transaction_idx on entries (transaction_id);
create index entries_org_idx on entries (org_id, livemode);

-- Entries are append-only: a correction is a reversing transaction. This holds for the ledger's own role too.
create function entries_append_only() returns trigger language plpgsql as $$
begin
  raise exception 'ledger entries are append-only (% refused)', tg_op using errcode = '42501';
end $$;
create trigger entries_append_only before update or delete on entries
  for each statement execute function entries_append_only();
create trigger entries_no_truncate before truncate on entries
  for each statement execute function entries_append_only();

create table holds (
  id text primary key,
  org_id text not null,
  livemode boolean not null,
  wallet_id uuid not null references accounts (id),
  participant_id text,
  amount bigint not null check (amount > 0),
  reference_id text not null,
  hold_reason_code text not null,
  hold_reason_description text,
  hold_until timestamptz,
  release_transfer_to_participant_id text,
  status text not null check (status in ('held', 'released')),
  -- The transaction that created the hold (a createHold or, e.g., the sale that held the creator's share).
  transaction_id text not null references transactions (id),
  metadata jsonb not null default '{}',
  created_at timestamptz not null default now(),
  -- The release record, set once when status becomes released.
  release_id text unique,
  released_at timestamptz,
  release_transaction_id text references transactions (id),
  release_transfer_executed boolean,
  constraint holds_reference_uq unique (org_id, livemode, reference_id),
  constraint holds_release_record check (
    (status = 'held' and release_id is null and released_at is null)
    or (status = 'released' and release_id is not null and released_at is not null and release_transaction_id is not null))
);
create index holds_wallet_active_idx on holds (wallet_id) where status = 'held';
create index holds_list_idx on holds (org_id, livemode, status, created_at, id);

-- Each sale's refundable remainder, decremented by refunds and reversals under this row's lock.
create table sales (
  org_id text not null,
  livemode boolean not null,
  sale_reference text not null,
  transaction_id text not null references transactions (id),
  participant_id text,
  gross bigint not null check (gross >= 0),
  creator_amount bigint not null check (creator_amount >= 0),
  platform_amount bigint not null,
  sales_tax bigint not null default 0 check (sales_tax >= 0),
  processing_fee bigint not null default 0 check (processing_fee >= 0),
  refunded_amount bigint not null default 0 check (refunded_amount >= 0 and refunded_amount <= gross),
  reversed boolean not null default false,
  hold_id text references holds (id),
  created_at timestamptz not null default now(),
  primary key (org_id, livemode, sale_reference)
);
create index sales_transaction_idx on sales (transaction_id);
