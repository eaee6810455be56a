-- Payments schema: checkout sessions (hosted + direct), wallet sessions, shared-wallet spends and their
-- reversals. Applied by the kit's migrateAll with search_path = payments. Every row carries org_id and
-- livemode and every unique key includes both. Money itself lives in the ledger: these rows record intents
-- (`completing`, `reversing`) and outcomes, with the deterministic ledger reference used to move it.

create table checkout_sessions (
  id uuid primary key,
  org_id text not null,
  livemode boolean not null,
  mode text not null check (mode in ('session', 'direct', 'direct_funded_wallet')),
  provider text not null check (provider in ('soledgic', 'stripe')),
  payment_rail text not null check (payment_rail in ('card', 'usdc')),
  -- completing: the ledger post was (or is being) asked for; the reconciler re-drives these.
  status text not null check (status in ('pending', 'completing', 'completed', 'failed')),
  participant_id text not null,
  merchant_name text not null,
  amount bigint not null check (amount > 0),
  currency text not null default 'USD',
  sales_tax bigint not null default 0 check (sales_tax >= 0),
  creator_bps integer not null check (creator_bps between 0 and 10000),
  creator_amount bigint not null check (creator_amount >= 0),
  platform_amount bigint not null check (platform_amount >= 0),
  hold_funds boolean not null default false,
  product_id text,
  product_name text,
  customer_email text,
  customer_id text,
  buyer_user_id text,
  -- direct_funded_wallet: the buyer's consumer_credit wallet, resolved at creation.
  buyer_wallet_id uuid,
  payment_method_id text,
  success_url text,
  cancel_url text,
  metadata jsonb not null default '{}',
  idempotency_key text,
  request_hash text not null,
  -- The answer to the creating request, replayed for the same idempotency key.
  create_response jsonb,
  checkout_url text,
  payment_id text,
  -- checkout:<id>, set when completion starts; never derived from a client key.
  ledger_reference text,
  sale_transaction_id text,
  hold_id text,
  completion_source text,
  sandbox_idempotency_key text,
  failure_code text,
  failure_reason text,
  expires_at timestamptz not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  completed_at timestamptz,
  constraint checkout_amounts_sum check (creator_amount + platform_amount + sales_tax = amount),
  constraint checkout_completed_has_sale check (status <> 'completed' or sale_transaction_id is not null),
  constraint checkout_completing_has_reference check (status not in ('completing', 'completed') or ledger_reference is not null)
);
create unique index checkout_sessions_idem_uq on checkout_sessions (org_id, livemode, idempotency_key) where idempotency_key is not null;
create index checkout_sessions_completing_idx on checkout_sessions (updated_at) where status = 'completing';

create table wallet_sessions (
  id text primary key,
  org_id text not null,
  livemode boolean not null,
  wallet_id uuid not null,
  wallet_type text not null check (wallet_type in ('consumer_credit', 'creator_earnings')),
  owner_id text,
  owner_type text,
  external_user_id text,
  customer_email text,
  permissions text[] not null,
  status text not null check (status in ('active', 'revoked')),
  success_url text,
  cancel_url text,
  metadata jsonb not null default '{}',
  idempotency_key text,
  request_hash text not null,
  create_response jsonb,
  expires_at timestamptz not null,
  created_at timestamptz not null default now()
);
create unique index wallet_sessions_idem_uq on wallet_sessions (org_id, livemode, idempotency_key) where idempotency_key is not null;

create table shared_spends (
  org_id text not null,
  livemode boolean not null,
  reference_id text not null,
  transaction_id text not null,
  consumer_sub text not null,
  consumer_wallet_id uuid not null,
  creator_id text not null,
  amount bigint not null check (amount > 0),
  sales_tax bigint not null default 0,
  creator_amount bigint not null,
  platform_amount bigint not null,
  creator_bps integer not null,
  product_id text,
  product_name text,
  metadata jsonb not null default '{}',
  -- settled → reversing (intent recorded, ledger asked) → reversed.
  status text not null check (status in ('settled', 'reversing', 'reversed')),
  created_at timestamptz not null default now(),
  primary key (org_id, livemode, reference_id),
  constraint shared_spends_amounts_sum check (creator_amount + platform_amount + sales_tax = amount)
);
create unique index shared_spends_txn_uq on shared_spends (org_id, livemode, transaction_id);

-- Audit log of reversals: who asked, why, and what the ledger did.
create table shared_spend_reversals (
  org_id text not null,
  livemode boolean not null,
  sale_transaction_id text not null,
  spend_reference_id text not null,
  reason text,
  metadata jsonb not null default '{}',
  request_id text,
  key_id text,
  -- The plan, fixed when the intent is recorded so every driver sends the ledger the same request: what is
  -- taken back from the creator's wallet, and the shortfall booked to the platform-funded creator_receivable.
  creator_take bigint not null check (creator_take >= 0),
  receivable_amount bigint not null check (receivable_amount >= 0),
  reversal_transaction_id text,
  status text not null check (status in ('reversing', 'reversed')),
  response jsonb,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (org_id, livemode, sale_transaction_id)
);
create index shared_spend_reversals_reversing_idx on shared_spend_reversals (updated_at) where status = 'reversing';
