/** The wire shapes of receipts and proofs (docs/api.md, Receipts), from their rows. */
import type { schemas } from "@treasury/contracts";
import type { ProofRow, ReceiptRow, SignatureRow } from "./ports.ts";

export function presentReceipt(r: ReceiptRow): schemas.ReceiptView {
  return {
    id: r.id,
    status: r.status,
    hosted_url: r.hosted_url,
    checkout_session_id: r.checkout_session_id,
    sale_transaction_id: r.sale_transaction_id,
    order_id: r.order_id,
    external_order_id: r.external_order_id,
    total_amount: r.total_amount,
    currency: r.currency,
    created_at: r.created_at.toISOString(),
    metadata: r.metadata,
  };
}

export function presentSignature(s: SignatureRow): schemas.ProofSignatureView {
  return {
    key_id: s.key_id,
    signer_type: s.signer_type,
    signer_id: s.signer_id,
    alg: s.alg,
    public_key_jwk: s.public_key_jwk,
    signature: s.signature,
    signed_payload: s.signed_payload,
    created_at: s.created_at.toISOString(),
  };
}

export function presentProof(p: ProofRow, receiptId: string | null, signatures: SignatureRow[]): schemas.ProofView {
  return {
    receipt_id: receiptId,
    transaction_id: p.transaction_id,
    canonical_payload: p.canonical_payload,
    receipt_hash: p.receipt_hash,
    chain: { sequence: p.sequence, previous_hash: p.previous_hash, entry_hash: p.entry_hash },
    service_signature: { alg: p.signature_alg, kid: p.signature_kid, jws: p.signature_jws },
    signatures: signatures.map(presentSignature),
    created_at: p.created_at.toISOString(),
  };
}
