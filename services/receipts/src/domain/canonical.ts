/**
 * What a proof commits to, written so an outsider can recompute every byte with any RFC 8785 (JSON
 * Canonicalization Scheme) library and SHA-256:
 *   canonical_payload = JCS({format, transaction})          receipt_hash = sha256_hex(canonical_payload)
 *   entry_hash = sha256_hex(JCS({previous_hash, receipt_hash, sequence}))   (previous_hash of sequence 1: 64 zeros)
 *   service signature = compact JWS (EdDSA) over JCS({entry_hash, previous_hash, receipt_hash, sequence, transaction_id})
 *   counterparty signature = compact JWS (ES256 or EdDSA) over the receipt_hash text itself
 *   chain checkpoint signature = compact JWS (EdDSA) over
 *     JCS({entry_hash, format: "treasury.receipt_chain_checkpoint.v1", livemode, org_id, sequence})
 */
import { createHash } from "node:crypto";
import type { schemas } from "@treasury/contracts";
import canonicalize from "canonicalize";

export const PAYLOAD_FORMAT = "treasury.ledger_transaction.v1";
export const GENESIS_HASH = "0".repeat(64);
export const CHECKPOINT_FORMAT = "treasury.receipt_chain_checkpoint.v1";

/** RFC 8785 text of a JSON value. */
export function canonicalJson(value: unknown): string {
  const text = canonicalize(value);
  if (text === undefined) throw new Error("value has no JSON form");
  return text;
}

export function sha256Hex(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}

/** The canonical payload of a transaction: every fact the ledger recorded that never changes afterwards. */
export function canonicalPayload(t: schemas.TransactionRecord): string {
  return canonicalJson({
    format: PAYLOAD_FORMAT,
    transaction: {
      id: t.id,
      org_id: t.org_id,
      livemode: t.livemode,
      transaction_type: t.transaction_type,
      reference_id: t.reference_id,
      amount: t.amount,
      currency: t.currency,
      description: t.description,
      metadata: t.metadata,
      reversal_of: t.reversal_of,
      effective_at: t.effective_at,
      created_at: t.created_at,
      entries: t.entries.map((e) => ({
        id: e.id,
        account_id: e.account_id,
        account_type: e.account_type,
        entity_id: e.entity_id,
        entry_type: e.entry_type,
        amount: e.amount,
      })),
    },
  });
}

export interface ChainLink {
  sequence: number;
  previous_hash: string;
  receipt_hash: string;
}

export function entryHash(link: ChainLink): string {
  return sha256Hex(canonicalJson({ previous_hash: link.previous_hash, receipt_hash: link.receipt_hash, sequence: link.sequence }));
}

/** What the service signs: the receipt hash together with its place in the chain. */
export function serviceSigningPayload(p: ChainLink & { entry_hash: string; transaction_id: string }): string {
  return canonicalJson({
    entry_hash: p.entry_hash,
    previous_hash: p.previous_hash,
    receipt_hash: p.receipt_hash,
    sequence: p.sequence,
    transaction_id: p.transaction_id,
  });
}

/** What a chain checkpoint's signature covers: the chain (org and environment) and its link at `sequence`. */
export function checkpointSigningPayload(c: { org_id: string; livemode: boolean; sequence: number; entry_hash: string }): string {
  return canonicalJson({ entry_hash: c.entry_hash, format: CHECKPOINT_FORMAT, livemode: c.livemode, org_id: c.org_id, sequence: c.sequence });
}
