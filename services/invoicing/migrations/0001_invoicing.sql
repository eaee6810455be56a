-- Invoicing schema: invoices with their lines, the counter that numbers them per org and environment without
-- gaps, payments against them, and the ledger postings each step records as an intent before it is driven.
-- Applied by the kit's migrateAll with search_path = invoicing.

-- One row per org and environment, locked by the transaction that inserts an invoice: the number is taken and
-- the invoice stored in one commit, so a rolled-back create leaves no hole and two creates never share one.
create table invoice_counters (
  org_id text not null,
  livemode boolean not null,
  last_seq bigint not null check (last_seq >= 0),
  primary key (org_id, livemode)
);

create table invoices (
  id text primary key,
  org_id text not null,
  livemode boolean not null,
  seq bigint not null check (seq > 0),
  number text not null,
  customer_name text not null,
  customer_email text,
  customer_id text,
  customer_address jsonb,
  issue_date date not null,
  due_date date not null check (due_date >= issue_date),
  notes text,
  terms text,
  reference_id text,
  -- sha256 of the create body: the same reference_id with another body is idempotency_conflict.
  request_hash text not null,
  metadata jsonb not null default '{}',
  -- overdue is never stored: it is an open invoice past its due date on the org's clock.
  status text not null check (status in ('draft', 'sent', 'partially_paid', 'paid', 'void')),
  total_cents bigint not null check (total_cents > 0),
  amount_paid_cents bigint not null default 0 check (amount_paid_cents >= 0 and amount_paid_cents <= total_cents),
  hosted_url text not null,
  send_transaction_id text,
  void_transaction_id text,
  -- When invoice.overdue was written for it (once per invoice).
  overdue_at timestamptz,
  created_at timestamptz not null default now(),
  sent_at timestamptz,
  paid_at timestamptz,
  voided_at timestamptz,
  constraint invoices_seq_uq unique (org_id, livemode, seq),
  constraint invoices_number_uq unique (org_id, livemode, number),
  constraint invoices_paid_state check ((status = 'paid') = (amount_paid_cents = total_cents) or status = 'void')
);
create unique index invoices_reference_uq on invoices (org_id, livemode, reference_id) where reference_id is not null;
create index invoices_list_idx on invoices (org_id, livemode, created_at desc, id);
create index invoices_customer_idx on invoices (org_id, livemode, customer_id) where customer_id is not null;
create index invoices_send_txn_idx on invoices (org_id, livemode, send_transaction_id) where send_transaction_id is not null;
-- The overdue job's read: open invoices not yet announced overdue, by due date.
create index invoices_open_due_idx on invoices (due_date) where status in ('sent', 'partially_paid') and overdue_at is null;

create table invoice_lines (
  invoice_id text not null references invoices (id),
  line_no integer not null check (line_no > 0),
  description text not null,
  quantity numeric(11, 4) not null check (quantity > 0),
  unit_price_cents bigint not null check (unit_price_cents > 0),
  amount_cents bigint not null check (amount_cents > 0),
  primary key (invoice_id, line_no)
);

create table invoice_payments (
  id text primary key,
  org_id text not null,
  livemode boolean not null,
  invoice_id text not null references invoices (id),
  -- The client's reference_id, or `bank_line:<id>` for a bank line that named the invoice.
  reference_id text not null,
  request_hash text not null,
  amount_cents bigint not null check (amount_cents > 0),
  paid_at timestamptz not null,
  payment_method text,
  source text not null check (source in ('api', 'bank_line')),
  metadata jsonb not null default '{}',
  transaction_id text,
  created_at timestamptz not null default now(),
  constraint invoice_payments_reference_uq unique (org_id, livemode, reference_id)
);
create index invoice_payments_invoice_idx on invoice_payments (invoice_id, created_at);

-- Step 1 of moving money (docs/architecture.md, "Money across services"): each ledger post an invoice needs,
-- recorded in the transaction that changes the invoice; driven to the ledger after commit, by the request and
-- by the reconciler, under its deterministic reference.
create table ledger_postings (
  id text primary key,
  org_id text not null,
  livemode boolean not null,
  invoice_id text not null references invoices (id),
  action text not null check (action in ('send', 'payment', 'void')),
  payment_id text references invoice_payments (id),
  ledger_kind text not null,
  ledger_reference text not null,
  amount_cents bigint not null check (amount_cents > 0),
  effective_date text not null,
  -- The events settling it writes, decided with the intent (whether this payment paid the invoice in full).
  event_types text[] not null,
  status text not null check (status in ('pending', 'posted', 'failed')),
  failure_code text,
  transaction_id text,
  created_at timestamptz not null default now(),
  posted_at timestamptz,
  constraint ledger_postings_reference_uq unique (org_id, livemode, ledger_kind, ledger_reference)
);
create index ledger_postings_pending_idx on ledger_postings (created_at) where status = 'pending';
create index ledger_postings_invoice_idx on ledger_postings (invoice_id);
