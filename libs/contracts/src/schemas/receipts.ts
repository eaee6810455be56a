/** Receipts, their signed ledger proofs and verification: bodies and answers (docs/api.md, Receipts). */
import { z } from "zod";
import { prefixedId, Uuid } from "../ids.ts";
import { Metadata, obj, str } from "./common.ts";

const TransactionId = prefixedId("txn");
const ReceiptId = prefixedId("rcpt");
/** A SHA-256 digest as 64 lowercase hex characters: receipt_hash, entry_hash, previous_hash. */
export const Sha256Hex = z.string({ error: "must be a string" }).regex(/^[0-9a-f]{64}$/, { message: "must be 64 lowercase hex characters (SHA-256)" });
/** A compact JWS: three base64url segments (the middle one empty when the payload is detached). */
const CompactJws = z
  .string({ error: "must be a string" })
  .max(4096)
  .regex(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+$/, { message: "must be a compact JWS (header.payload.signature, base64url)" });
/**
 * Checkout id or sale transaction id names the sale; order ids are the merchant's labels for it. The official
 * SDK sends `checkout_session_id` and `transaction_id`: the same two, under those names (one name per field, or
 * both with the same value).
 */
export const GenerateReceiptBody = z
  .object({
    checkout_id: Uuid.optional(),
    checkout_session_id: Uuid.optional(),
    sale_transaction_id: TransactionId.optional(),
    transaction_id: TransactionId.optional(),
    order_id: str(255).min(1).optional(),
    external_order_id: str(255).min(1).optional(),
    metadata: Metadata.optional(),
  })
  .superRefine((b, ctx) => {
    for (const [ours, alias] of [
      ["checkout_id", "checkout_session_id"],
      ["sale_transaction_id", "transaction_id"],
    ] as const) {
      const a = b[ours];
      const c = b[alias];
      if (a !== undefined && c !== undefined && a.toLowerCase() !== c.toLowerCase()) {
        ctx.addIssue({ code: "custom", path: [alias], message: `names another sale than ${ours}` });
      }
    }
  })
  .transform(({ checkout_session_id, transaction_id, ...b }) => {
    const checkout = b.checkout_id ?? checkout_session_id;
    const sale = b.sale_transaction_id ?? transaction_id;
    return { ...b, ...(checkout !== undefined ? { checkout_id: checkout } : {}), ...(sale !== undefined ? { sale_transaction_id: sale } : {}) };
  });
export const ProofSignatureBody = z.object({
  key_id: str(255).min(1),
  signature: CompactJws,
  public_key_jwk: obj,
  signer_type: z.literal("platform", { error: 'must be "platform"' }).optional(),
  signer_id: str(255).min(1).optional(),
  signed_payload: str(65_536).optional(),
});
export const VerifyReceiptBody = z.object({
  receipt_id: ReceiptId.optional(),
  receipt_hash: Sha256Hex.optional(),
  signature: CompactJws.optional(),
  public_key_jwk: obj.optional(),
  signed_payload: str(65_536).optional(),
});

/** Receipt answer (docs/api.md, Receipts). */
export interface ReceiptView {
  id: string;
  status: "issued";
  hosted_url: string;
  checkout_session_id: string | null;
  sale_transaction_id: string;
  order_id: string | null;
  external_order_id: string | null;
  total_amount: number;
  currency: string;
  created_at: string;
  metadata: Record<string, unknown>;
}
export interface ProofSignatureView {
  key_id: string;
  signer_type: "platform";
  signer_id: string | null;
  alg: string;
  public_key_jwk: Record<string, unknown>;
  signature: string;
  signed_payload: string;
  created_at: string;
}
/** Signed ledger proof answer (docs/api.md, Receipts). */
export interface ProofView {
  receipt_id: string | null;
  transaction_id: string;
  canonical_payload: string;
  receipt_hash: string;
  chain: { sequence: number; previous_hash: string; entry_hash: string };
  service_signature: { alg: string; kid: string; jws: string };
  signatures: ProofSignatureView[];
  created_at: string;
}
export interface VerifyReceiptResult {
  valid: boolean;
  checks: {
    receipt_hash: boolean;
    chain: boolean;
    service_signature: boolean;
    counterparty_signatures: Array<{ key_id: string; valid: boolean }>;
  };
}
