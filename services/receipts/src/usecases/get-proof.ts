/**
 * getReceiptProof / getTransactionReceiptProof: the signed ledger proof of a transaction, made on its first
 * fetch and the same on every later one. Making it: the ledger's record of the transaction (read before any
 * database transaction here), its RFC 8785 payload and hash, then, under the chain head's row lock, the next
 * sequence, the entry hash and the service's signature, inserted with the head's advance in one commit.
 * Concurrent first fetches wait on that lock; the later ones then find the proof and answer it.
 */
import { DomainError, type schemas } from "@treasury/contracts";
import { withTx } from "@treasury/service-kit";
import { canonicalPayload, entryHash, serviceSigningPayload, sha256Hex } from "../domain/canonical.ts";
import { SERVICE_ALG, signCompact } from "../signing/jws.ts";
import type { Scope } from "../store/db.ts";
import { findProof, insertProof, listSignatures, lockChainHead, type ProofRow } from "../store/proofs.ts";
import { findReceiptBySale } from "../store/receipts.ts";
import type { ReceiptsDeps } from "./deps.ts";
import { loadReceipt } from "./get-receipt.ts";
import { presentProof } from "./present.ts";

const TRANSACTION_ID_RE = /^txn_[A-Za-z0-9]{1,64}$/;

/** Errors: transaction_not_found, service_unavailable (signing not configured). */
export async function proofOf(deps: ReceiptsDeps, scope: Scope, transactionId: string): Promise<ProofRow> {
  if (!TRANSACTION_ID_RE.test(transactionId)) throw new DomainError("transaction_not_found", `Transaction ${transactionId} not found`);
  const existing = await findProof(deps.sql, scope, transactionId);
  if (existing !== undefined) return existing;
  const record = await deps.reads.transactionRecord(scope, transactionId);
  const payload = canonicalPayload(record);
  const receiptHash = sha256Hex(payload);
  const signer = await deps.keyring.signingKey();
  return withTx(deps.sql, async (tx) => {
    const head = await lockChainHead(tx, scope);
    const raced = await findProof(tx, scope, transactionId);
    if (raced !== undefined) return raced;
    const link = { sequence: head.last_sequence + 1, previous_hash: head.last_entry_hash, receipt_hash: receiptHash };
    const entry_hash = entryHash(link);
    const jws = await signCompact(signer.key, signer.kid, serviceSigningPayload({ ...link, entry_hash, transaction_id: transactionId }));
    return insertProof(tx, {
      org_id: scope.orgId,
      livemode: scope.livemode,
      transaction_id: transactionId,
      ...link,
      entry_hash,
      canonical_payload: payload,
      signature_alg: SERVICE_ALG,
      signature_kid: signer.kid,
      signature_jws: jws,
    });
  });
}

async function view(deps: ReceiptsDeps, scope: Scope, proof: ProofRow, receiptId: string | null): Promise<schemas.ProofView> {
  return presentProof(proof, receiptId, await listSignatures(deps.sql, scope, proof.transaction_id));
}

/** Errors: receipt_not_found, transaction_not_found, service_unavailable. */
export async function getReceiptProof(deps: ReceiptsDeps, scope: Scope, receiptId: string): Promise<schemas.ProofView> {
  const receipt = await loadReceipt(deps.sql, scope, receiptId);
  return view(deps, scope, await proofOf(deps, scope, receipt.sale_transaction_id), receipt.id);
}

/** Errors: transaction_not_found, service_unavailable. */
export async function getTransactionProof(deps: ReceiptsDeps, scope: Scope, transactionId: string): Promise<schemas.ProofView> {
  const proof = await proofOf(deps, scope, transactionId);
  const receipt = await findReceiptBySale(deps.sql, scope, transactionId);
  return view(deps, scope, proof, receipt?.id ?? null);
}
