-- Organisations and their API keys. The gateway authenticates against these; keys are stored only as
-- SHA-256 hashes with a short display prefix.
create table orgs (
  id text primary key,
  name text not null,
  status text not null default 'active' check (status in ('active', 'suspended', 'inactive', 'canceled')),
  -- Per-org rate-limit overrides: {"<class>": {"capacity": n, "refill_per_sec": n}}.
  rate_limits jsonb not null default '{}',
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

create table api_keys (
  id text primary key,
  org_id text not null references orgs(id),
  livemode boolean not null,
  key_hash text not null unique,
  display_prefix text not null,
  -- null = a key without a scope list: every scope.
  scopes text[],
  created_at timestamptz not null default now(),
  expires_at timestamptz,
  revoked_at timestamptz
);
create index api_keys_org on api_keys(org_id);
