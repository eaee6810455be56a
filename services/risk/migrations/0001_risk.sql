-- Risk schema: fraud policies, the evaluations of proposed money movements with their hits, the counters that
-- velocity and budget policies count against (docs/adr/0018-risk-counters-in-postgresql.md), and alert
-- configuration with the alerts waiting to be sent. Applied by the kit's migrateAll with search_path = risk.

create table policies (
  id text primary key,
  org_id text not null,
  livemode boolean not null,
  policy_type text not null check (policy_type in ('amount_limit', 'velocity', 'new_bank_account', 'payout_ratio',
    'refund_rate', 'require_instrument', 'budget_cap', 'projection_guard')),
  -- Checked against the type's schema (libs/contracts schemas/risk.ts) before it is stored.
  config jsonb not null,
  severity text not null check (severity in ('hard', 'soft')),
  priority integer not null check (priority >= 0),
  applies_to text[] not null check (cardinality(applies_to) > 0),
  enabled boolean not null default true,
  description text,
  created_at timestamptz not null default now(),
  -- A deleted policy stays: the hits of past evaluations name it.
  deleted_at timestamptz
);
-- The one read an evaluation starts with: the enabled policies of a tenant, in the order they are applied.
create index policies_enabled_idx on policies (org_id, livemode, priority, id) where enabled and deleted_at is null;
create index policies_list_idx on policies (org_id, livemode, created_at, id) where deleted_at is null;

create table evaluations (
  id text primary key,
  org_id text not null,
  livemode boolean not null,
  -- api: POST /v1/fraud/evaluations (key = the client's idempotency_key); internal: the money path (key = the
  -- movement's ledger reference). Separate namespaces, so a client's key never answers for a payout.
  source text not null check (source in ('api', 'internal')),
  key text not null,
  -- sha256 of the request: the same idempotency_key with another body is idempotency_conflict.
  request_hash text not null,
  operation text not null check (operation in ('checkout', 'payout', 'refund', 'transfer', 'withdrawal', 'evaluation')),
  decision text not null check (decision in ('allow', 'review', 'deny')),
  amount bigint not null check (amount > 0),
  currency text not null,
  participant_id text,
  buyer_id text,
  ip text,
  category text,
  authorizing_instrument_id text,
  expected_date text,
  counterparty_name text,
  review_status text check (review_status in ('pending', 'approved', 'denied')),
  review_actor text,
  review_reason text,
  reviewed_at timestamptz,
  created_at timestamptz not null default now(),
  constraint evaluations_key_uq unique (org_id, livemode, source, key),
  constraint evaluations_review_iff check ((decision = 'review') = (review_status is not null))
);
-- The operators' queue: evaluations waiting for a decision, oldest first.
create index evaluations_review_queue_idx on evaluations (created_at, id) where review_status = 'pending';

create table evaluation_hits (
  evaluation_id text not null references evaluations (id),
  ordinal integer not null,
  org_id text not null,
  livemode boolean not null,
  policy_id text not null,
  policy_type text not null,
  severity text not null check (severity in ('hard', 'soft')),
  reason text not null,
  primary key (evaluation_id, ordinal)
);
create index evaluation_hits_policy_idx on evaluation_hits (policy_id);

-- What velocity and budget policies count: one row per evaluation a counter took in (not denied), at the tenant's
-- time. A counter is `<policy id>:<subject value>`; a window sums the rows after its start. Rows older than the
-- longest window any policy may have are swept.
create table counter_events (
  org_id text not null,
  livemode boolean not null,
  counter text not null,
  at timestamptz not null,
  amount bigint not null check (amount > 0),
  evaluation_id text not null references evaluations (id)
);
create index counter_events_window_idx on counter_events (org_id, livemode, counter, at);
create index counter_events_at_idx on counter_events (at);

create table alert_configs (
  id text primary key,
  org_id text not null,
  livemode boolean not null,
  alert_type text not null check (alert_type in ('breach_risk', 'projection_created', 'instrument_invalidated', 'review_required')),
  channel text not null check (channel in ('webhook', 'email')),
  webhook_url text,
  recipients text[] not null default '{}',
  thresholds jsonb not null default '{}',
  is_active boolean not null default true,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  deleted_at timestamptz,
  constraint alert_configs_target check ((channel = 'webhook') = (webhook_url is not null) and (channel = 'email') = (cardinality(recipients) > 0))
);
create index alert_configs_active_idx on alert_configs (org_id, livemode, alert_type) where is_active and deleted_at is null;

-- Alerts recorded with the evaluation that fired them and sent afterwards by a job, so a crash loses none.
create table alert_deliveries (
  id text primary key,
  org_id text not null,
  livemode boolean not null,
  config_id text not null references alert_configs (id),
  evaluation_id text references evaluations (id),
  alert_type text not null,
  payload jsonb not null,
  status text not null check (status in ('pending', 'sent', 'failed')),
  attempts integer not null default 0,
  next_attempt_at timestamptz not null default now(),
  last_error text,
  created_at timestamptz not null default now(),
  sent_at timestamptz
);
create index alert_deliveries_due_idx on alert_deliveries (next_attempt_at) where status = 'pending';
