-- Ed25519 signatures published as a JWKS, and ordered delivery per endpoint.
--
-- An endpoint chooses how its deliveries are signed: `hmac_sha256` (Standard Webhooks `v1`, its own secret, the
-- default) or `ed25519` (`v1a`, the platform's signing key, verified with GET /v1/webhooks/jwks). Every endpoint
-- keeps its secret either way, so switching back needs no new secret.
alter table endpoints add column signature_scheme text not null default 'hmac_sha256'
  check (signature_scheme in ('hmac_sha256', 'ed25519'));
-- `per_endpoint`: only the oldest unfinished delivery of the endpoint is due (dispatcher's claim).
alter table endpoints add column ordering text not null default 'none' check (ordering in ('none', 'per_endpoint'));

-- The EVENTS stream's sequence of the event a delivery carries: the order of an ordered endpoint's deliveries (an
-- owner's events are published in their commit order, so within an owner this is the event's `sequence` order).
-- Null on rows written before this migration, which sort first.
alter table deliveries add column stream_seq bigint;
-- Copied from the endpoint at fan-out (and when the endpoint's ordering changes): the claim reads it without a join.
alter table deliveries add column ordered boolean not null default false;
-- The claim finds each ordered endpoint's head (its oldest unfinished delivery) with one probe of this index, and
-- scans only unordered rows for the rest: the blocked backlog of an ordered endpoint is never scanned.
create index deliveries_ordered_idx on deliveries (endpoint_id, stream_seq nulls first) where ordered and status in ('pending', 'retrying');
create index deliveries_due_unordered_idx on deliveries (next_retry_at) where status in ('pending', 'retrying') and not ordered;
create index endpoints_ordered_idx on endpoints (id) where ordering = 'per_endpoint';

-- The platform's Ed25519 keys that sign `ed25519` endpoints' deliveries. One is active; after a rotation the
-- previous ones sign beside it and stay published until `expires_at`, then leave the JWKS and lose their
-- private half. The private key (PKCS#8 DER, base64) is sealed with the service's key ring (WEBHOOK_SECRET_KEYS),
-- bound to its kid, as endpoint secrets are; `sealing_key_id` names the ring key, so the reseal pass can move it.
create table signing_keys (
  -- RFC 7638 thumbprint of the public JWK.
  kid text primary key,
  public_jwk jsonb not null,
  sealed_private_key text,
  sealing_key_id text,
  status text not null check (status in ('active', 'retiring', 'expired')),
  created_at timestamptz not null default now(),
  retired_at timestamptz,
  expires_at timestamptz,
  constraint signing_keys_private_while_published check ((status = 'expired') = (sealed_private_key is null)),
  constraint signing_keys_retired check ((status = 'active') = (retired_at is null) and (status = 'active') = (expires_at is null))
);
create unique index signing_keys_one_active on signing_keys ((true)) where status = 'active';
