-- Refunds schema: refunds of recorded sales, buyer refund requests, and each org's refund policy. Applied by
-- the kit's migrateAll with search_path = refunds. Every row carries org_id and livemode and every unique key
-- includes both. Money itself lives in the ledger: a refund row records the intent (`pending`) with the
-- deterministic ledger reference used to move it, then its outcome.

create table refunds (
  id text primary key,
  org_id text not null,
  livemode boolean not null,
  -- What makes two client requests the same refund: the idempotency key, else a key derived from the request
  -- (sale reference + amount + external_refund_id), else the refund request it executes.
  request_key text not null,
  request_hash text not null,
  idempotency_key text,
  external_refund_id text,
  refund_request_id text,
  sale_reference text not null,
  -- What was asked for: null means everything that remains refundable on the refund_from side.
  amount_requested bigint check (amount_requested > 0),
  refund_from text not null check (refund_from in ('both', 'platform_only', 'creator_only')),
  -- The org's shortfall policy when the intent was recorded, so every driver sends the ledger the same request.
  shortfall text not null check (shortfall in ('receivable', 'refuse')),
  reason text not null,
  metadata jsonb not null default '{}',
  -- pending: the ledger post was (or is being) asked for; the reconciler re-drives these.
  status text not null check (status in ('pending', 'completed', 'failed')),
  ledger_reference text not null,
  transaction_id text,
  sale_transaction_id text,
  participant_id text,
  refunded_amount bigint not null default 0 check (refunded_amount >= 0),
  from_creator bigint not null default 0 check (from_creator >= 0),
  from_platform bigint not null default 0 check (from_platform >= 0),
  sales_tax bigint not null default 0 check (sales_tax >= 0),
  hold_amount_used bigint not null default 0 check (hold_amount_used >= 0),
  creator_receivable_amount bigint not null default 0 check (creator_receivable_amount >= 0),
  remaining_amount bigint check (remaining_amount >= 0),
  sale_gross bigint,
  is_full_refund boolean not null default false,
  failure_code text,
  failure_reason text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  completed_at timestamptz,
  constraint refunds_completed_has_transaction check (status <> 'completed' or transaction_id is not null),
  constraint refunds_parts_sum check (status <> 'completed' or from_creator + from_platform = refunded_amount),
  constraint refunds_failed_has_code check (status <> 'failed' or failure_code is not null)
);
create unique index refunds_request_key_uq on refunds (org_id, livemode, request_key);
create unique index refunds_external_id_uq on refunds (org_id, livemode, external_refund_id) where external_refund_id is not null;
create unique index refunds_ledger_reference_uq on refunds (org_id, livemode, ledger_reference);
create index refunds_list_idx on refunds (org_id, livemode, created_at desc, id desc);
create index refunds_sale_idx on refunds (org_id, livemode, sale_reference, created_at desc);
create index refunds_pending_idx on refunds (updated_at) where status = 'pending';

create table refund_requests (
  id text primary key,
  org_id text not null,
  livemode boolean not null,
  sale_reference text not null,
  customer_id text,
  customer_email text,
  amount bigint check (amount > 0),
  reason text,
  refund_from text not null check (refund_from in ('both', 'platform_only', 'creator_only')),
  -- created → processing (approved: its refund is pending) → completed | failed; created → rejected | cancelled.
  status text not null check (status in ('created', 'processing', 'completed', 'rejected', 'cancelled', 'failed')),
  refund_id text references refunds (id),
  refund_transaction_id text,
  rejection_reason text,
  failure_reason text,
  cancellation_reason text,
  reviewed_by_actor text,
  review_metadata jsonb not null default '{}',
  metadata jsonb not null default '{}',
  idempotency_key text,
  request_hash text not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  reviewed_at timestamptz,
  completed_at timestamptz,
  cancelled_at timestamptz,
  constraint refund_requests_approved_has_refund check (status not in ('processing', 'completed', 'failed') or refund_id is not null)
);
create unique index refund_requests_idem_uq on refund_requests (org_id, livemode, idempotency_key) where idempotency_key is not null;
create index refund_requests_list_idx on refund_requests (org_id, livemode, created_at desc, id desc);
create index refund_requests_sale_idx on refund_requests (org_id, livemode, sale_reference);

-- Per org and environment: what a refund does when the creator's balance cannot cover the creator's part.
-- No row means the default, `receivable` (docs/adr/0009-refund-shortfall.md).
create table settings (
  org_id text not null,
  livemode boolean not null,
  shortfall_policy text not null check (shortfall_policy in ('receivable', 'refuse')),
  updated_at timestamptz not null default now(),
  primary key (org_id, livemode)
);
