-- Bank statement imports and reconciliation. Forward-only; applied with search_path = ledger.
-- Bank lines are facts reported by a bank, not postings: they never touch accounts or entries. Reconciliation
-- links a bank line to the ledger transaction it reports.

-- Saved CSV mappings, per org and environment, found by id or replaced by name.
create table import_templates (
  id text primary key,
  org_id text not null,
  livemode boolean not null,
  name text not null,
  format text not null default 'csv' check (format = 'csv'),
  mapping jsonb not null,
  description text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint import_templates_name_uq unique (org_id, livemode, name)
);

-- One row per import call: what was asked and what it added.
create table bank_imports (
  id text primary key,
  org_id text not null,
  livemode boolean not null,
  format text not null,
  account_name text,
  template_id text,
  statements integer not null check (statements >= 0),
  lines integer not null check (lines >= 0),
  imported integer not null check (imported >= 0),
  duplicates integer not null check (duplicates >= 0),
  errors integer not null check (errors >= 0),
  created_at timestamptz not null default now()
);
create index bank_imports_org_idx on bank_imports (org_id, livemode, created_at);

create table bank_lines (
  id text primary key,
  org_id text not null,
  livemode boolean not null,
  import_id text not null references bank_imports (id),
  -- The bank account the statement names (IBAN or number), else the import's account_name.
  bank_account text not null,
  currency text not null check (currency ~ '^[A-Z]{3}$'),
  booking_date date not null,
  value_date date,
  -- Signed, in the currency's minor units: a credit (money in) is positive.
  amount bigint not null,
  amount_decimal text not null,
  description text not null default '',
  reference text not null default '',
  bank_reference text,
  counterparty jsonb,
  bank_code text,
  -- 1-based line of the statement where the line starts (in the import that added it).
  line_no integer not null check (line_no > 0),
  -- The bank's identifier of the line (FITID, customer or bank reference), else a digest of its text and its
  -- occurrence among equal lines of its statement: the same file imported twice yields the same keys.
  dedupe_ref text not null,
  created_at timestamptz not null default now()
);
-- The de-duplication rule; concurrent imports of one file serialise on it, so a line is added once.
create unique index bank_lines_dedupe_uq on bank_lines (org_id, livemode, bank_account, booking_date, amount, dedupe_ref);
create index bank_lines_date_idx on bank_lines (org_id, livemode, booking_date, id);
create index bank_lines_import_idx on bank_lines (import_id);

-- A bank line matched to a ledger transaction. An unmatch keeps the row (unmatched_at set) for the audit trail;
-- the partial unique indexes make an active match of a bank line, or of a transaction, exist at most once,
-- whatever runs concurrently.
create table reconciliation_matches (
  id text primary key,
  org_id text not null,
  livemode boolean not null,
  bank_line_id text not null references bank_lines (id),
  transaction_id text not null references transactions (id),
  method text not null check (method in ('auto', 'manual')),
  confidence real check (confidence is null or (confidence >= 0 and confidence <= 1)),
  days_apart integer,
  reference_match boolean,
  note text,
  created_at timestamptz not null default now(),
  unmatched_at timestamptz
);
create unique index reconciliation_matches_bank_line_uq on reconciliation_matches (org_id, livemode, bank_line_id)
  where unmatched_at is null;
create unique index reconciliation_matches_transaction_uq on reconciliation_matches (org_id, livemode, transaction_id)
  where unmatched_at is null;
create index reconciliation_matches_list_idx on reconciliation_matches (org_id, livemode, created_at, id);

-- A transaction's accounting time is coalesce(effective_at, created_at): reports as of a past time, history
-- and date filters range over that expression, which no index served. With org and environment first, one
-- range scan reads exactly the transactions of an org up to (or between) two times, in time order.
create index transactions_accounted_idx on transactions (org_id, livemode, (coalesce(effective_at, created_at)), id);
