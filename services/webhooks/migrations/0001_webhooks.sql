-- Webhooks schema: endpoints, one delivery row per (event, endpoint), sandbox test-event replays.
-- Applied by the kit's migrateAll with search_path = webhooks. Every row carries org_id and livemode and every
-- query filters by both, so sandbox and live (and two orgs) never see each other's endpoints or deliveries.

create table endpoints (
  id text primary key,
  org_id text not null,
  livemode boolean not null,
  url text not null,
  description text,
  events text[] not null,
  is_active boolean not null default true,
  -- The signing secret must be readable to sign; it is never logged and shown to the client once.
  secret text not null,
  -- After a rotation the previous secret keeps signing beside the new one until it expires.
  previous_secret text,
  previous_secret_expires_at timestamptz,
  secret_rotated_at timestamptz,
  -- Set at the first failed attempt after a success; an endpoint failing for 5 days is disabled.
  failing_since timestamptz,
  disabled_reason text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  deleted_at timestamptz
);
create index endpoints_org_idx on endpoints (org_id, livemode) where deleted_at is null;

create table deliveries (
  id text primary key,
  org_id text not null,
  livemode boolean not null,
  endpoint_id text not null references endpoints (id),
  event_id text not null,
  event_type text not null,
  -- The exact bytes sent on every attempt (each attempt is signed afresh over them).
  body text not null,
  status text not null check (status in ('pending', 'retrying', 'delivered', 'failed')),
  attempts int not null default 0,
  max_attempts int not null,
  -- When the next attempt is due; while an attempt is in flight, when its lease expires (a crashed worker's
  -- attempt is then picked up again).
  next_retry_at timestamptz default now(),
  lease_until timestamptz,
  response_status int,
  response_body text,
  response_time_ms int,
  last_error text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  delivered_at timestamptz,
  constraint deliveries_event_endpoint_uq unique (event_id, endpoint_id)
);
create index deliveries_due_idx on deliveries (next_retry_at) where status in ('pending', 'retrying');
create index deliveries_endpoint_idx on deliveries (org_id, livemode, endpoint_id, created_at desc);
create index deliveries_org_idx on deliveries (org_id, livemode, created_at desc);
-- A recovered endpoint's waiting retries are brought forward (settleAttempt).
create index deliveries_retrying_idx on deliveries (endpoint_id) where status = 'retrying';

-- sandboxSendTestWebhook replays on idempotency_key answer the first event instead of queueing another.
create table test_events (
  org_id text not null,
  livemode boolean not null,
  idempotency_key text not null,
  event_id text not null,
  event_type text not null,
  deliveries_queued int not null,
  created_at timestamptz not null default now(),
  primary key (org_id, livemode, idempotency_key)
);
