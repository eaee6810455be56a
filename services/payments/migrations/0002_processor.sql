-- Live money through the card processor: its events as received (answered at once, worked on afterwards),
-- the processor's facts about a checkout's payment, live wallet top-ups, card refunds and disputes. Every business
-- row carries org_id and livemode; processor events carry neither until they are matched to one of our rows.

-- Each processor event once, by the processor's own id: a redelivery finds its row and does nothing. The worker
-- claims due rows with a lease (locked_until), works on them outside any transaction, then records the outcome;
-- a failure is retried with a growing delay (next_attempt_at), a crash is retried when the lease runs out.
create table processor_events (
  provider text not null check (provider in ('stripe')),
  event_id text not null,
  type text not null,
  livemode boolean not null,
  payload jsonb not null,
  -- pending: to be worked on; processed: done (or nothing to do); ignored: a type this service does not use.
  status text not null check (status in ('pending', 'processed', 'ignored')),
  outcome text,
  attempts integer not null default 0,
  last_error text,
  next_attempt_at timestamptz not null default now(),
  locked_until timestamptz,
  received_at timestamptz not null default now(),
  processed_at timestamptz,
  primary key (provider, event_id)
);
create index processor_events_due_idx on processor_events (next_attempt_at) where status = 'pending';

-- The processor's fee of a live card payment and who bears it; what the processor calls the payment.
alter table checkout_sessions
  add column processing_fee bigint not null default 0 check (processing_fee >= 0),
  add column processing_fee_paid_by text not null default 'platform' check (processing_fee_paid_by in ('platform', 'creator', 'split')),
  add column processor_payment_intent text,
  add column processor_charge text;
create index checkout_sessions_payment_intent_idx on checkout_sessions (processor_payment_intent) where processor_payment_intent is not null;
create index checkout_sessions_charge_idx on checkout_sessions (processor_charge) where processor_charge is not null;

-- A live wallet top-up paid through the processor's hosted checkout:
-- pending → completing (fee known, ledger asked) → completed; pending → failed (expired or unpaid).
create table wallet_topups (
  id text primary key,
  org_id text not null,
  livemode boolean not null,
  wallet_session_id text not null,
  wallet_id uuid not null,
  amount bigint not null check (amount > 0),
  currency text not null default 'USD',
  -- One form render is one top-up: a double submit finds this row again.
  nonce text not null,
  status text not null check (status in ('pending', 'completing', 'completed', 'failed')),
  processor_session_id text,
  checkout_url text,
  processing_fee bigint not null default 0 check (processing_fee >= 0),
  processor_payment_intent text,
  -- wallet_topup:stripe:<processor session id>, set when completion starts.
  ledger_reference text,
  transaction_id text,
  failure_reason text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  completed_at timestamptz,
  constraint wallet_topups_completed_has_transaction check (status <> 'completed' or transaction_id is not null)
);
create unique index wallet_topups_nonce_uq on wallet_topups (org_id, livemode, wallet_session_id, nonce);
create unique index wallet_topups_processor_uq on wallet_topups (processor_session_id) where processor_session_id is not null;
create index wallet_topups_completing_idx on wallet_topups (updated_at) where status = 'completing';

-- A card refund at the processor, one per refund of the refunds service (its id is the processor's idempotency key).
create table processor_refunds (
  org_id text not null,
  livemode boolean not null,
  refund_id text not null,
  checkout_session_id uuid not null,
  sale_reference text not null,
  amount bigint not null check (amount > 0),
  processor_payment_intent text not null,
  processor_refund_id text,
  -- requested: the processor was (or is being) asked; pending: it accepted; then succeeded or failed.
  status text not null check (status in ('requested', 'pending', 'succeeded', 'failed')),
  failure_reason text,
  -- The last settled status the refunds service acknowledged (null: not told yet).
  notified_status text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (org_id, livemode, refund_id)
);
create unique index processor_refunds_processor_uq on processor_refunds (processor_refund_id) where processor_refund_id is not null;
create index processor_refunds_intent_idx on processor_refunds (processor_payment_intent);

-- A card dispute (chargeback) of a live checkout sale:
-- opening (hold planned, ledger asked) → open → closing (outcome known, ledger asked) → won | lost.
create table disputes (
  id text primary key,
  org_id text not null,
  livemode boolean not null,
  processor_dispute_id text not null,
  checkout_session_id uuid not null,
  sale_reference text not null,
  participant_id text not null,
  amount bigint not null check (amount > 0),
  currency text not null default 'USD',
  reason text,
  status text not null check (status in ('opening', 'open', 'closing', 'won', 'lost')),
  -- The creator's share of the disputed amount that the hold reserves (at most what was available).
  hold_amount bigint not null default 0 check (hold_amount >= 0),
  hold_id text,
  hold_transaction_id text,
  outcome text check (outcome in ('won', 'lost')),
  -- Lost: what the ledger takes back (the disputed amount, at most the sale's refundable remainder).
  refund_amount bigint check (refund_amount >= 0),
  refund_transaction_id text,
  fee bigint not null default 0 check (fee >= 0),
  fee_transaction_id text,
  release_transaction_id text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  closed_at timestamptz
);
create unique index disputes_processor_uq on disputes (processor_dispute_id);
create index disputes_in_flight_idx on disputes (updated_at) where status in ('opening', 'closing');
