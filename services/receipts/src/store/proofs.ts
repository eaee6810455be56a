/** SQL of proofs, their chain heads and their counterparty signatures. */
import { GENESIS_HASH } from "../domain/canonical.ts";
import type { StoredLink } from "../domain/chain.ts";
import type { Q, Scope, Tx } from "./db.ts";

export interface ProofRow extends StoredLink {
  org_id: string;
  livemode: boolean;
  transaction_id: string;
  signature_alg: string;
  signature_kid: string;
  signature_jws: string;
  created_at: Date;
}

export interface SignatureRow {
  key_id: string;
  signer_type: "platform";
  signer_id: string | null;
  alg: "ES256" | "EdDSA";
  public_key_jwk: Record<string, unknown>;
  signature: string;
  signed_payload: string;
  created_at: Date;
}

export interface ChainHead {
  last_sequence: number;
  last_entry_hash: string;
}

type RawProof = Omit<ProofRow, "sequence"> & { sequence: string };
const parseProof = (r: RawProof): ProofRow => ({ ...r, sequence: Number(r.sequence) });

export async function findProof(q: Q, s: Scope, transactionId: string): Promise<ProofRow | undefined> {
  const [row] = await q<RawProof[]>`
    select * from receipts.proofs where org_id = ${s.orgId} and livemode = ${s.livemode} and transaction_id = ${transactionId}`;
  return row === undefined ? undefined : parseProof(row);
}

export async function findProofByHash(q: Q, s: Scope, receiptHash: string): Promise<ProofRow | undefined> {
  const [row] = await q<RawProof[]>`
    select * from receipts.proofs where org_id = ${s.orgId} and livemode = ${s.livemode} and receipt_hash = ${receiptHash}
    order by sequence limit 1`;
  return row === undefined ? undefined : parseProof(row);
}

/**
 * Locks the chain's head row (creating it at the genesis hash on the first proof). Held until the transaction
 * ends, it makes proof creation in one chain take turns: each gets the next sequence, none is skipped or forked.
 */
export async function lockChainHead(tx: Tx, s: Scope): Promise<ChainHead> {
  await tx`
    insert into receipts.chain_heads (org_id, livemode, last_sequence, last_entry_hash)
    values (${s.orgId}, ${s.livemode}, 0, ${GENESIS_HASH}) on conflict do nothing`;
  const [head] = await tx<{ last_sequence: string; last_entry_hash: string }[]>`
    select last_sequence, last_entry_hash from receipts.chain_heads where org_id = ${s.orgId} and livemode = ${s.livemode} for update`;
  if (head === undefined) throw new Error("chain head vanished under its lock");
  return { last_sequence: Number(head.last_sequence), last_entry_hash: head.last_entry_hash };
}

export async function findChainHead(q: Q, s: Scope): Promise<ChainHead | undefined> {
  const [head] = await q<{ last_sequence: string; last_entry_hash: string }[]>`
    select last_sequence, last_entry_hash from receipts.chain_heads where org_id = ${s.orgId} and livemode = ${s.livemode}`;
  return head === undefined ? undefined : { last_sequence: Number(head.last_sequence), last_entry_hash: head.last_entry_hash };
}

export type NewProof = Omit<ProofRow, "created_at">;

export async function insertProof(tx: Tx, p: NewProof): Promise<ProofRow> {
  const [row] = await tx<RawProof[]>`
    insert into receipts.proofs (org_id, livemode, transaction_id, sequence, previous_hash, entry_hash, canonical_payload, receipt_hash,
      signature_alg, signature_kid, signature_jws)
    values (${p.org_id}, ${p.livemode}, ${p.transaction_id}, ${p.sequence}, ${p.previous_hash}, ${p.entry_hash}, ${p.canonical_payload},
      ${p.receipt_hash}, ${p.signature_alg}, ${p.signature_kid}, ${p.signature_jws})
    returning *`;
  if (row === undefined) throw new Error("proof insert returned no row");
  await tx`
    update receipts.chain_heads set last_sequence = ${p.sequence}, last_entry_hash = ${p.entry_hash}
    where org_id = ${p.org_id} and livemode = ${p.livemode}`;
  return parseProof(row);
}

/** One page of a chain in sequence order, after `afterSequence` and up to `throughSequence`. */
export async function chainPage(q: Q, s: Scope, afterSequence: number, throughSequence: number, limit: number): Promise<ProofRow[]> {
  const rows = await q<RawProof[]>`
    select * from receipts.proofs where org_id = ${s.orgId} and livemode = ${s.livemode} and sequence > ${afterSequence}
      and sequence <= ${throughSequence}
    order by sequence limit ${limit}`;
  return rows.map(parseProof);
}

export async function listSignatures(q: Q, s: Scope, transactionId: string): Promise<SignatureRow[]> {
  return q<SignatureRow[]>`
    select key_id, signer_type, signer_id, alg, public_key_jwk, signature, signed_payload, created_at from receipts.proof_signatures
    where org_id = ${s.orgId} and livemode = ${s.livemode} and transaction_id = ${transactionId}
    order by created_at, key_id`;
}

/** Inserts a signature; undefined when the proof already has one with this key_id. */
export async function insertSignature(q: Q, s: Scope, transactionId: string, sig: Omit<SignatureRow, "created_at">): Promise<SignatureRow | undefined> {
  const [row] = await q<SignatureRow[]>`
    insert into receipts.proof_signatures (org_id, livemode, transaction_id, key_id, signer_type, signer_id, alg, public_key_jwk, signature, signed_payload)
    values (${s.orgId}, ${s.livemode}, ${transactionId}, ${sig.key_id}, ${sig.signer_type}, ${sig.signer_id}, ${sig.alg},
      ${q.json(sig.public_key_jwk as Record<string, string>)}, ${sig.signature}, ${sig.signed_payload})
    on conflict do nothing
    returning key_id, signer_type, signer_id, alg, public_key_jwk, signature, signed_payload, created_at`;
  return row;
}

export async function findSignature(q: Q, s: Scope, transactionId: string, keyId: string): Promise<SignatureRow | undefined> {
  const [row] = await q<SignatureRow[]>`
    select key_id, signer_type, signer_id, alg, public_key_jwk, signature, signed_payload, created_at from receipts.proof_signatures
    where org_id = ${s.orgId} and livemode = ${s.livemode} and transaction_id = ${transactionId} and key_id = ${keyId}`;
  return row;
}
