-- Signed checkpoints of each chain: the service's signature that links 1..sequence were whole when it walked
-- them and that the link at sequence has entry_hash. A verification walks only the links after the newest
-- checkpoint whose signature verifies, so its time does not grow with the chain (usecases/verify-proof.ts).
-- Append-only, like proofs.
create table chain_checkpoints (
  org_id text not null,
  livemode boolean not null,
  sequence bigint not null check (sequence >= 1),
  entry_hash text not null,
  signature_kid text not null references signing_keys (kid),
  signature_jws text not null,
  created_at timestamptz not null default now(),
  primary key (org_id, livemode, sequence)
);
create trigger chain_checkpoints_append_only before update or delete on chain_checkpoints
  for each statement execute function proofs_append_only();
create trigger chain_checkpoints_no_truncate before truncate on chain_checkpoints
  for each statement execute function proofs_append_only();

-- The last full audit of each chain (every link from the first, whatever the checkpoints say,
-- usecases/audit-chains.ts): problems it found fail every verification of that chain until an audit finds it
-- whole again.
create table chain_audits (
  org_id text not null,
  livemode boolean not null,
  audited_at timestamptz not null,
  through_sequence bigint not null,
  problems jsonb not null,
  primary key (org_id, livemode)
);
