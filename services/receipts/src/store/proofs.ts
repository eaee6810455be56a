/** SQL of proofs, their chain heads and their counterparty signatures (the ProofStore port). */
import type { Tenant } from "@treasury/contracts";
import { withTx } from "@treasury/service-kit";
import { GENESIS_HASH } from "../domain/canonical.ts";
import type { ChainHead, NewProof, ProofRow, ProofStore, SignatureRow } from "../usecases/ports.ts";
import type { Q, Sql, Tx } from "./db.ts";

type RawProof = Omit<ProofRow, "sequence"> & { sequence: string };
const parseProof = (r: RawProof): ProofRow => ({ ...r, sequence: Number(r.sequence) });

async function findProof(q: Q, t: Tenant, transactionId: string): Promise<ProofRow | undefined> {
  const [row] = await q<RawProof[]>`
    select * from receipts.proofs where org_id = ${t.orgId} and livemode = ${t.livemode} and transaction_id = ${transactionId}`;
  return row === undefined ? undefined : parseProof(row);
}

async function findProofByHash(q: Q, t: Tenant, receiptHash: string): Promise<ProofRow | undefined> {
  const [row] = await q<RawProof[]>`
    select * from receipts.proofs where org_id = ${t.orgId} and livemode = ${t.livemode} and receipt_hash = ${receiptHash}
    order by sequence limit 1`;
  return row === undefined ? undefined : parseProof(row);
}

/**
 * Locks the chain's head row (creating it at the genesis hash on the first proof). Held until the transaction
 * ends, it makes proof creation in one chain take turns: each gets the next sequence, none is skipped or forked.
 */
async function lockChainHead(tx: Tx, t: Tenant): Promise<ChainHead> {
  await tx`
    insert into receipts.chain_heads (org_id, livemode, last_sequence, last_entry_hash)
    values (${t.orgId}, ${t.livemode}, 0, ${GENESIS_HASH}) on conflict do nothing`;
  const [head] = await tx<{ last_sequence: string; last_entry_hash: string }[]>`
    select last_sequence, last_entry_hash from receipts.chain_heads where org_id = ${t.orgId} and livemode = ${t.livemode} for update`;
  if (head === undefined) throw new Error("chain head vanished under its lock");
  return { last_sequence: Number(head.last_sequence), last_entry_hash: head.last_entry_hash };
}

async function findChainHead(q: Q, t: Tenant): Promise<ChainHead | undefined> {
  const [head] = await q<{ last_sequence: string; last_entry_hash: string }[]>`
    select last_sequence, last_entry_hash from receipts.chain_heads where org_id = ${t.orgId} and livemode = ${t.livemode}`;
  return head === undefined ? undefined : { last_sequence: Number(head.last_sequence), last_entry_hash: head.last_entry_hash };
}

async function insertProof(tx: Tx, p: NewProof): Promise<ProofRow> {
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

async function chainPage(q: Q, t: Tenant, afterSequence: number, throughSequence: number, limit: number): Promise<ProofRow[]> {
  const rows = await q<RawProof[]>`
    select * from receipts.proofs where org_id = ${t.orgId} and livemode = ${t.livemode} and sequence > ${afterSequence}
      and sequence <= ${throughSequence}
    order by sequence limit ${limit}`;
  return rows.map(parseProof);
}

async function listSignatures(q: Q, t: Tenant, transactionId: string): Promise<SignatureRow[]> {
  return q<SignatureRow[]>`
    select key_id, signer_type, signer_id, alg, public_key_jwk, signature, signed_payload, created_at from receipts.proof_signatures
    where org_id = ${t.orgId} and livemode = ${t.livemode} and transaction_id = ${transactionId}
    order by created_at, key_id`;
}

async function insertSignature(q: Q, t: Tenant, transactionId: string, sig: Omit<SignatureRow, "created_at">): Promise<SignatureRow | undefined> {
  const [row] = await q<SignatureRow[]>`
    insert into receipts.proof_signatures (org_id, livemode, transaction_id, key_id, signer_type, signer_id, alg, public_key_jwk, signature, signed_payload)
    values (${t.orgId}, ${t.livemode}, ${transactionId}, ${sig.key_id}, ${sig.signer_type}, ${sig.signer_id}, ${sig.alg},
      ${q.json(sig.public_key_jwk as Record<string, string>)}, ${sig.signature}, ${sig.signed_payload})
    on conflict do nothing
    returning key_id, signer_type, signer_id, alg, public_key_jwk, signature, signed_payload, created_at`;
  return row;
}

async function findSignature(q: Q, t: Tenant, transactionId: string, keyId: string): Promise<SignatureRow | undefined> {
  const [row] = await q<SignatureRow[]>`
    select key_id, signer_type, signer_id, alg, public_key_jwk, signature, signed_payload, created_at from receipts.proof_signatures
    where org_id = ${t.orgId} and livemode = ${t.livemode} and transaction_id = ${transactionId} and key_id = ${keyId}`;
  return row;
}

export function pgProofStore(sql: Sql): ProofStore {
  return {
    find: (t, transactionId) => findProof(sql, t, transactionId),
    findByHash: (t, receiptHash) => findProofByHash(sql, t, receiptHash),
    append: (t, transactionId, link) =>
      withTx(sql, async (tx) => {
        const head = await lockChainHead(tx, t);
        const raced = await findProof(tx, t, transactionId);
        if (raced !== undefined) return raced;
        return insertProof(tx, await link(head));
      }),
    head: (t) => findChainHead(sql, t),
    page: (t, afterSequence, throughSequence, limit) => chainPage(sql, t, afterSequence, throughSequence, limit),
    listSignatures: (t, transactionId) => listSignatures(sql, t, transactionId),
    insertSignature: (t, transactionId, sig) => insertSignature(sql, t, transactionId, sig),
    findSignature: (t, transactionId, keyId) => findSignature(sql, t, transactionId, keyId),
  };
}
