-- Payouts schema: creators' bank accounts, payouts and the ACH files that carry live payouts to the bank.
-- Applied by the kit's migrateAll with search_path = payouts. Every org-owned row carries org_id and livemode
-- and every unique key includes both. Money itself lives in the ledger: a payout row records the intent, the
-- deterministic ledger references used to move it (`payout:<id>`, `payout:<id>:settle`, `payout:<id>:return`)
-- and the outcome.

create table bank_accounts (
  id text primary key,
  org_id text not null,
  livemode boolean not null,
  participant_id text not null,
  routing_number text not null check (routing_number ~ '^[0-9]{9}$'),
  account_type text not null check (account_type in ('checking', 'savings')),
  last4 text not null check (last4 ~ '^[0-9]{4}$'),
  -- Sealed JSON {account_holder_name, account_number} (AES-256-GCM), bound to this row's id; sealed_key_id names
  -- the key that sealed it. The account number exists nowhere else in clear at rest.
  sealed text not null,
  sealed_key_id text not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (org_id, livemode, participant_id)
);

-- One file per cut; a file spans orgs (the platform originates every entry), and only live payouts go into one.
create table ach_files (
  id bigserial primary key,
  livemode boolean not null default true check (livemode),
  name text not null unique,
  creation_date date not null,
  file_id_modifier text not null check (file_id_modifier ~ '^[A-Z0-9]$'),
  effective_date date not null,
  entry_count integer not null check (entry_count > 0),
  total_credit_cents bigint not null check (total_credit_cents > 0),
  entry_hash text not null,
  -- The file's text sealed like bank accounts (it holds account numbers), bound to the file's name.
  sealed_content text not null,
  sealed_key_id text not null,
  created_at timestamptz not null default now(),
  -- Set once the file is in the drop directory; a file without it is delivered again (same name, same bytes).
  delivered_at timestamptz,
  location text,
  unique (creation_date, file_id_modifier)
);
create index ach_files_undelivered_idx on ach_files (id) where delivered_at is null;

-- The 7-digit sequence part of trace numbers (ODFI routing prefix + sequence); it cycles after 9,999,999 entries.
create sequence trace_seq minvalue 1 maxvalue 9999999 cycle;

create table payouts (
  id text primary key,
  org_id text not null,
  livemode boolean not null,
  participant_id text not null,
  -- The wallet the client named (immutable: the ledger request is built from it), and the wallet the ledger moved.
  requested_wallet_id uuid,
  wallet_id uuid,
  reference_id text not null,
  request_hash text not null,
  reference_type text,
  description text,
  payout_method text,
  metadata jsonb not null default '{}',
  amount bigint not null check (amount > 0),
  fees bigint not null check (fees >= 0 and fees < amount),
  fees_paid_by text not null check (fees_paid_by in ('platform', 'creator')),
  -- What the bank receives: amount − fees when the creator pays them, amount when the platform does.
  net_amount bigint not null check (net_amount > 0 and net_amount <= amount),
  rail text not null check (rail in ('sandbox', 'bank_ach')),
  -- posting: the ledger post was (or is being) asked for; the reconciler re-drives it.
  -- refused: the ledger refused it (nothing moved); invisible, and the same request may try again.
  status text not null check (status in ('posting', 'refused', 'pending', 'processing', 'paid', 'failed')),
  ledger_reference text not null,
  transaction_id text,
  previous_balance bigint,
  new_balance bigint,
  refusal_code text,
  -- The destination at request time (live): the bank account's routing number, type, last four digits, and the
  -- holder's name and account number sealed and bound to this payout's id.
  dest_routing_number text,
  dest_account_type text,
  dest_last4 text,
  dest_sealed text,
  ach_file_id bigint references ach_files (id),
  trace_number text check (trace_number ~ '^[0-9]{15}$'),
  bank_transfer_status text,
  -- A transition in flight (settle or return): its ledger post is asked for, then the row moves on.
  action text check (action in ('settle', 'return')),
  action_at timestamptz,
  -- return: where the returned money comes back from (the in-transit account, or cash once settled).
  return_from text check (return_from in ('payouts_in_transit', 'platform_cash')),
  return_code text,
  failure_reason text,
  settle_transaction_id text,
  return_transaction_id text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  processing_at timestamptz,
  paid_at timestamptz,
  failed_at timestamptz,
  unique (org_id, livemode, reference_id),
  -- Sandbox never touches a rail: a sandbox payout can never be in a bank file.
  constraint payouts_rail_matches_env check ((livemode and rail = 'bank_ach') or (not livemode and rail = 'sandbox')),
  constraint payouts_sandbox_never_filed check (livemode or (ach_file_id is null and trace_number is null)),
  constraint payouts_posted_has_transaction check (status in ('posting', 'refused') or transaction_id is not null),
  constraint payouts_filed_has_trace check (status not in ('processing') or (ach_file_id is not null and trace_number is not null)),
  constraint payouts_live_has_destination check (not livemode or dest_sealed is not null),
  constraint payouts_action_states check (action is null or status in ('processing', 'paid'))
);
create index payouts_posting_idx on payouts (updated_at) where status = 'posting';
create index payouts_action_idx on payouts (action_at) where action is not null;
create index payouts_unfiled_idx on payouts (created_at) where status = 'pending' and rail = 'bank_ach';
create index payouts_processing_idx on payouts (processing_at) where status = 'processing';
create index payouts_trace_idx on payouts (trace_number) where trace_number is not null;
create index payouts_list_idx on payouts (org_id, livemode, created_at desc, id);
create index payouts_participant_idx on payouts (org_id, livemode, participant_id, created_at desc, id);
