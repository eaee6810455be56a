-- Receipts schema: receipts, signed ledger proofs in one hash chain per org and environment, counterparty
-- signatures, and the service's signing keys. Applied by the kit's migrateAll with search_path = receipts.
-- Every row of customer data carries org_id and livemode and every unique key includes both.

-- The service's Ed25519 signing keys. They sign proofs of every org, so they carry no org: the public halves are
-- published at GET /v1/receipts/jwks. The private half is sealed (AES-256-GCM, the kit's key ring) under a key
-- of configuration (RECEIPTS_SEALING_KEYS); the database never holds it in the clear.
create table signing_keys (
  -- RFC 7638 thumbprint of the public JWK.
  kid text primary key,
  alg text not null check (alg = 'EdDSA'),
  public_jwk jsonb not null,
  -- The PKCS#8 private key as a sealed value (`v1.<sealing key id>.<iv>.<ciphertext>`), bound to this row's kid.
  sealed_private_key text not null,
  status text not null check (status in ('active', 'retired')),
  created_at timestamptz not null default now(),
  retired_at timestamptz,
  constraint signing_keys_retired_at check ((status = 'retired') = (retired_at is not null))
);
-- At most one key signs new proofs; retired keys stay published so their proofs still verify.
create unique index signing_keys_one_active on signing_keys ((true)) where status = 'active';

create table receipts (
  id text primary key,
  org_id text not null,
  livemode boolean not null,
  sale_transaction_id text not null,
  checkout_session_id uuid,
  order_id text,
  external_order_id text,
  status text not null default 'issued' check (status in ('issued')),
  total_amount bigint not null check (total_amount >= 0),
  sales_tax bigint not null default 0 check (sales_tax >= 0),
  currency text not null,
  metadata jsonb not null default '{}',
  hosted_url text not null,
  -- What the hosted page shows, as it stood when the receipt was issued.
  merchant_name text,
  product_name text,
  description text,
  sold_at timestamptz not null,
  created_at timestamptz not null default now(),
  -- One receipt per sale: generating again for the same sale answers the same receipt.
  constraint receipts_sale_uq unique (org_id, livemode, sale_transaction_id)
);

-- The last link of each org and environment's chain. Locking this row serialises proof creation per chain, so
-- concurrent proofs get consecutive sequences: no gap, no fork.
create table chain_heads (
  org_id text not null,
  livemode boolean not null,
  last_sequence bigint not null check (last_sequence >= 0),
  last_entry_hash text not null,
  primary key (org_id, livemode)
);

create table proofs (
  org_id text not null,
  livemode boolean not null,
  transaction_id text not null,
  sequence bigint not null check (sequence >= 1),
  previous_hash text not null,
  entry_hash text not null,
  -- RFC 8785 JSON of the transaction as the ledger recorded it; receipt_hash is its SHA-256.
  canonical_payload text not null,
  receipt_hash text not null,
  signature_alg text not null,
  signature_kid text not null references signing_keys (kid),
  signature_jws text not null,
  created_at timestamptz not null default now(),
  primary key (org_id, livemode, transaction_id),
  constraint proofs_sequence_uq unique (org_id, livemode, sequence)
);
create index proofs_receipt_hash_idx on proofs (org_id, livemode, receipt_hash);

-- Proofs are append-only: a changed or removed proof would silently rewrite history. This holds for the
-- service's own role too; the hash chain and the signatures still reveal any change made around this guard.
create function proofs_append_only() returns trigger language plpgsql as $$
begin
  raise exception 'receipt proofs are append-only (% refused)', tg_op using errcode = '42501';
end $$;
create trigger proofs_append_only before update or delete on proofs
  for each statement execute function proofs_append_only();
create trigger proofs_no_truncate before truncate on proofs
  for each statement execute function proofs_append_only();

create table proof_signatures (
  org_id text not null,
  livemode boolean not null,
  transaction_id text not null,
  key_id text not null,
  signer_type text not null check (signer_type in ('platform')),
  signer_id text,
  alg text not null check (alg in ('ES256', 'EdDSA')),
  public_key_jwk jsonb not null,
  signature text not null,
  signed_payload text not null,
  created_at timestamptz not null default now(),
  primary key (org_id, livemode, transaction_id, key_id),
  foreign key (org_id, livemode, transaction_id) references proofs (org_id, livemode, transaction_id)
);
