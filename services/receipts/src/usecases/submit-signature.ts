/**
 * submitReceiptProofSignature: a platform counterparty's signature over the proof's receipt hash (the
 * 64-character hex text itself), as a compact JWS (ES256 or EdDSA), attached or detached. It is verified
 * before it is stored; a key_id is accepted once per proof.
 */
import { DomainError, type schemas, type Tenant } from "@treasury/contracts";
import type { z } from "zod";
import { publicJwkOf, verifiesOver } from "../signing/jws.ts";
import { proofOf } from "./get-proof.ts";
import { loadReceipt } from "./get-receipt.ts";
import type { ProofRow, ReceiptsDeps, SignatureRow } from "./ports.ts";
import { presentSignature } from "./present.ts";

type Body = z.output<typeof schemas.ProofSignatureBody>;

/** A counterparty's public key from a request, or invalid_public_key. */
export function counterpartyKey(jwk: Record<string, unknown>): NonNullable<ReturnType<typeof publicJwkOf>> {
  const key = publicJwkOf(jwk);
  if (key === undefined) {
    throw new DomainError("invalid_public_key", undefined, {
      details: [{ path: "public_key_jwk", message: "must be a public JWK: {kty: EC, crv: P-256, x, y} or {kty: OKP, crv: Ed25519, x}, without d" }],
    });
  }
  return key;
}

/** The signature stored, and the proof it signs as it stands now (with every signature it carries). */
export interface SubmittedSignature {
  signature: SignatureRow;
  proof: ProofRow;
  receiptId: string;
  signatures: SignatureRow[];
}

/**
 * Errors: receipt_not_found, invalid_public_key, signed_payload_mismatch, invalid_signature, duplicate_signature,
 * transaction_not_found, service_unavailable.
 */
export async function submitSignature(deps: ReceiptsDeps, tenant: Tenant, receiptId: string, body: Body): Promise<SubmittedSignature> {
  const receipt = await loadReceipt(deps.receipts, tenant, receiptId);
  const key = counterpartyKey(body.public_key_jwk);
  const proof = await proofOf(deps, tenant, receipt.sale_transaction_id);
  if (body.signed_payload !== undefined && body.signed_payload !== proof.receipt_hash) {
    throw new DomainError("signed_payload_mismatch", `signed_payload must be this proof's receipt_hash (${proof.receipt_hash})`, {
      hint: `GET /v1/receipts/${receipt.id}/proof and sign its receipt_hash`,
    });
  }
  if (!(await verifiesOver(body.signature, key, proof.receipt_hash))) {
    throw new DomainError("invalid_signature", `The signature does not verify with public_key_jwk over receipt_hash ${proof.receipt_hash}`, {
      hint: `Sign the receipt_hash text of GET /v1/receipts/${receipt.id}/proof as a compact JWS (${key.alg})`,
    });
  }
  const stored = await deps.proofs.insertSignature(tenant, proof.transaction_id, {
    key_id: body.key_id,
    signer_type: body.signer_type ?? "platform",
    signer_id: body.signer_id ?? null,
    alg: key.alg,
    public_key_jwk: key.jwk,
    signature: body.signature,
    signed_payload: proof.receipt_hash,
  });
  if (stored === undefined) {
    const existing = await deps.proofs.findSignature(tenant, proof.transaction_id, body.key_id);
    throw new DomainError("duplicate_signature", `This proof already has a signature with key_id ${body.key_id}`, {
      ...(existing === undefined ? {} : { extra: { signature: presentSignature(existing) } }),
    });
  }
  const signatures = await deps.proofs.listSignatures(tenant, proof.transaction_id);
  return { signature: stored, proof, receiptId: receipt.id, signatures };
}
