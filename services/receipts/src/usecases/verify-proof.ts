/**
 * verifyReceiptProof: checks a receipt's proof (by receipt_id) or the proof with a given receipt_hash:
 *   receipt_hash            the canonical payload hashes to it (and to the receipt_hash given, if any);
 *   chain                   the chain of the org and environment is unbroken and every link's service
 *                           signature verifies, from its newest signed checkpoint to its head (a removed or
 *                           altered proof after the checkpoint fails every proof's verification; one before it
 *                           fails them from the next full audit on), and the proof's own link recomputes;
 *   service_signature       the proof's JWS verifies with the published key of its kid over its chain link
 *                           (and a `signature` given without a key, if any, is such a JWS too);
 *   counterparty_signatures each stored signature, and a `signature` given with `public_key_jwk`, verify over
 *                           the receipt hash.
 * An unknown hash is not an error: its checks are false.
 */
import { DomainError, type schemas, type Tenant } from "@treasury/contracts";
import type { z } from "zod";
import { entryHash, sha256Hex } from "../domain/canonical.ts";
import { publicJwkOf, verifiesOver } from "../signing/jws.ts";
import { proofOf } from "./get-proof.ts";
import { loadReceipt } from "./get-receipt.ts";
import type { ProofRow, ReceiptsDeps } from "./ports.ts";
import { counterpartyKey } from "./submit-signature.ts";
import { serviceSignatureValid, walkChain } from "./walk-chain.ts";

type Body = z.output<typeof schemas.VerifyReceiptBody>;

/**
 * The chain check of a verification: the links after the newest checkpoint (usecases/walk-chain.ts), the proof's
 * own link, and what the last full audit of the chain found (usecases/audit-chains.ts).
 */
async function chainProblems(deps: ReceiptsDeps, tenant: Tenant, proof: ProofRow): Promise<string[]> {
  const { problems } = await walkChain(deps, tenant, { full: false });
  if (entryHash(proof) !== proof.entry_hash) problems.push(`sequence ${proof.sequence}: entry_hash does not recompute`);
  const audit = await deps.chains.findAudit(tenant);
  if (audit !== undefined && audit.problems.length > 0) {
    problems.push(...audit.problems.map((p) => `full audit of ${audit.audited_at.toISOString()}: ${p}`));
  }
  return problems;
}

async function targetProof(deps: ReceiptsDeps, tenant: Tenant, body: Body): Promise<{ proof: ProofRow | undefined; receiptId: string | null }> {
  if (body.receipt_id !== undefined) {
    const receipt = await loadReceipt(deps.receipts, tenant, body.receipt_id);
    return { proof: await proofOf(deps, tenant, receipt.sale_transaction_id), receiptId: receipt.id };
  }
  if (body.receipt_hash === undefined) {
    throw new DomainError("validation_error", "receipt_id or receipt_hash is required", {
      details: [{ path: "receipt_id", message: "receipt_id or receipt_hash is required" }],
    });
  }
  return { proof: await deps.proofs.findByHash(tenant, body.receipt_hash), receiptId: null };
}

type Key = ReturnType<typeof counterpartyKey>;

/** Stored signatures of the proof, then the one given with a public key, each checked over `hash`. */
async function counterpartyChecks(deps: ReceiptsDeps, tenant: Tenant, proof: ProofRow | undefined, hash: string, body: Body, provided: Key | undefined) {
  const out: Array<{ key_id: string; valid: boolean }> = [];
  for (const s of proof === undefined ? [] : await deps.proofs.listSignatures(tenant, proof.transaction_id)) {
    const key = publicJwkOf(s.public_key_jwk);
    out.push({ key_id: s.key_id, valid: key !== undefined && s.signed_payload === hash && (await verifiesOver(s.signature, key, hash)) });
  }
  if (provided !== undefined && body.signature !== undefined) {
    const payloadOk = body.signed_payload === undefined || body.signed_payload === hash;
    const kid = body.public_key_jwk?.["kid"];
    out.push({ key_id: typeof kid === "string" ? kid : "provided", valid: hash !== "" && payloadOk && (await verifiesOver(body.signature, provided, hash)) });
  }
  return out;
}

/** The proof's own service signature and, when a `signature` comes without a key, that one as a service JWS too. */
async function serviceChecks(deps: ReceiptsDeps, proof: ProofRow | undefined, body: Body, provided: Key | undefined): Promise<boolean> {
  if (proof === undefined) return false;
  if (!(await serviceSignatureValid(deps.keyring, proof, proof.signature_jws))) return false;
  return body.signature === undefined || provided !== undefined || (await serviceSignatureValid(deps.keyring, proof, body.signature));
}

/** Errors: validation_error, receipt_not_found, invalid_public_key, transaction_not_found, service_unavailable. */
export async function verifyProof(deps: ReceiptsDeps, tenant: Tenant, body: Body): Promise<Record<string, unknown>> {
  if (body.public_key_jwk !== undefined && body.signature === undefined) {
    throw new DomainError("validation_error", "signature is required with public_key_jwk", {
      details: [{ path: "signature", message: "required with public_key_jwk" }],
    });
  }
  const provided = body.public_key_jwk === undefined ? undefined : counterpartyKey(body.public_key_jwk);
  const { proof, receiptId } = await targetProof(deps, tenant, body);
  const hash = proof?.receipt_hash ?? body.receipt_hash ?? "";
  const problems: string[] = [];
  const hashOk =
    proof !== undefined &&
    sha256Hex(proof.canonical_payload) === proof.receipt_hash &&
    (body.receipt_hash === undefined || body.receipt_hash === proof.receipt_hash);
  if (!hashOk) problems.push(proof === undefined ? "no proof has this receipt_hash" : "receipt_hash does not match the proof's canonical payload");
  const chainIssues = proof === undefined ? [] : await chainProblems(deps, tenant, proof);
  problems.push(...chainIssues);
  const serviceOk = await serviceChecks(deps, proof, body, provided);
  if (proof !== undefined && !serviceOk) problems.push("service signature does not verify");
  const counterparties = await counterpartyChecks(deps, tenant, proof, hash, body, provided);
  for (const c of counterparties) if (!c.valid) problems.push(`counterparty signature ${c.key_id} does not verify`);
  const checks: schemas.VerifyReceiptResult["checks"] = {
    receipt_hash: hashOk,
    chain: proof !== undefined && chainIssues.length === 0,
    service_signature: serviceOk,
    counterparty_signatures: counterparties,
  };
  const valid = checks.receipt_hash && checks.chain && serviceOk && counterparties.every((c) => c.valid);
  return { valid, checks, receipt_id: receiptId, transaction_id: proof?.transaction_id ?? null, receipt_hash: hash === "" ? null : hash, problems };
}
