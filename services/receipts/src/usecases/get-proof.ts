/**
 * getReceiptProof / getTransactionReceiptProof: the signed ledger proof of a transaction, made on its first
 * fetch and the same on every later one. Making it: the ledger's record of the transaction (read before any
 * database transaction here), its RFC 8785 payload and hash, then, under the chain head's row lock, the next
 * sequence, the entry hash and the service's signature, inserted with the head's advance in one commit.
 * Concurrent first fetches wait on that lock; the later ones then find the proof and answer it.
 */
import { DomainError, type schemas, type Tenant } from "@treasury/contracts";
import { canonicalPayload, entryHash, serviceSigningPayload, sha256Hex } from "../domain/canonical.ts";
import { SERVICE_ALG, signCompact } from "../signing/jws.ts";
import { loadReceipt } from "./get-receipt.ts";
import type { ProofRow, ReceiptsDeps } from "./ports.ts";
import { presentProof } from "./present.ts";

const TRANSACTION_ID_RE = /^txn_[A-Za-z0-9]{1,64}$/;

type ProofDeps = Pick<ReceiptsDeps, "proofs" | "reads" | "keyring">;

/** Errors: transaction_not_found, service_unavailable (signing not configured). */
export async function proofOf(deps: ProofDeps, tenant: Tenant, transactionId: string): Promise<ProofRow> {
  if (!TRANSACTION_ID_RE.test(transactionId)) throw new DomainError("transaction_not_found", `Transaction ${transactionId} not found`);
  const existing = await deps.proofs.find(tenant, transactionId);
  if (existing !== undefined) return existing;
  const record = await deps.reads.transactionRecord(tenant, transactionId);
  const payload = canonicalPayload(record);
  const receiptHash = sha256Hex(payload);
  const signer = await deps.keyring.signingKey();
  return deps.proofs.append(tenant, transactionId, async (head) => {
    const link = { sequence: head.last_sequence + 1, previous_hash: head.last_entry_hash, receipt_hash: receiptHash };
    const entry_hash = entryHash(link);
    const jws = await signCompact(signer.key, signer.kid, serviceSigningPayload({ ...link, entry_hash, transaction_id: transactionId }));
    return {
      org_id: tenant.orgId,
      livemode: tenant.livemode,
      transaction_id: transactionId,
      ...link,
      entry_hash,
      canonical_payload: payload,
      signature_alg: SERVICE_ALG,
      signature_kid: signer.kid,
      signature_jws: jws,
    };
  });
}

async function view(deps: Pick<ReceiptsDeps, "proofs">, tenant: Tenant, proof: ProofRow, receiptId: string | null): Promise<schemas.ProofView> {
  return presentProof(proof, receiptId, await deps.proofs.listSignatures(tenant, proof.transaction_id));
}

/** Errors: receipt_not_found, transaction_not_found, service_unavailable. */
export async function getReceiptProof(deps: ReceiptsDeps, tenant: Tenant, receiptId: string): Promise<schemas.ProofView> {
  const receipt = await loadReceipt(deps.receipts, tenant, receiptId);
  return view(deps, tenant, await proofOf(deps, tenant, receipt.sale_transaction_id), receipt.id);
}

/** Errors: transaction_not_found, service_unavailable. */
export async function getTransactionProof(deps: ReceiptsDeps, tenant: Tenant, transactionId: string): Promise<schemas.ProofView> {
  const proof = await proofOf(deps, tenant, transactionId);
  const receipt = await deps.receipts.findBySale(tenant, transactionId);
  return view(deps, tenant, proof, receipt?.id ?? null);
}
