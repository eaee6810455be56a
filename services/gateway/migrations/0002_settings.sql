-- Operator switches of the gateway (e.g. maintenance mode), changed with the admin CLI and applied at once
-- through NOTIFY gateway_auth_changed.
create table settings (
  key text primary key,
  value jsonb not null,
  updated_at timestamptz not null default now()
);
