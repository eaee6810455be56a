/**
 * createWalletSession: a short-lived hosted wallet page session. The wallet is named by wallet_id, by owner
 * (owner_id / external_user_id; consumer wallets are created on first use, creator wallets belong to their
 * participant), or — sandbox buyers only — derived from customer_email as a stable test wallet.
 * Default permissions: buyers view_balance, list_activity, top_up; creators view_balance, list_activity.
 *
 * Errors: validation_error, wallet_not_found, participant_not_found, idempotency_conflict.
 */
import { createHash } from "node:crypto";
import { DomainError, newId, schemas, type Tenant } from "@treasury/contracts";
import { requestHash } from "@treasury/service-kit";
import type { z } from "zod";
import type { WalletPermission, WalletSessionRow } from "../domain/records.ts";
import { liveReturnUrlProblem } from "../domain/return-urls.ts";
import type { PaymentsDeps } from "./deps.ts";
import type { LedgerWallet } from "./ports.ts";

type Body = z.output<typeof schemas.CreateWalletSessionBody>;

export const WALLET_SESSION_MINUTES_DEFAULT = 30;
const BUYER_PERMISSIONS: WalletPermission[] = ["view_balance", "list_activity", "top_up"];
const CREATOR_PERMISSIONS: WalletPermission[] = ["view_balance", "list_activity"];

function invalid(path: string, message: string, hint?: string): DomainError {
  return new DomainError("validation_error", `Invalid body: ${path}: ${message}`, { details: [{ path, message }], ...(hint !== undefined ? { hint } : {}) });
}

/** The stable sandbox test wallet owner of an email address (case-insensitive). */
export function sandboxOwnerForEmail(email: string): string {
  return `sandbox_email_${createHash("sha256").update(email.trim().toLowerCase()).digest("hex").slice(0, 24)}`;
}

export function walletSessionStatus(row: WalletSessionRow, now: Date): "active" | "expired" | "revoked" {
  if (row.status === "revoked") return "revoked";
  return row.expires_at.getTime() <= now.getTime() ? "expired" : "active";
}

export function presentWalletSession(row: WalletSessionRow, altBaseUrl: string, now: Date): Record<string, unknown> {
  const creator = row.wallet_type === "creator_earnings";
  return {
    id: row.id,
    object: "wallet_session",
    wallet_id: row.wallet_id,
    wallet_type: row.wallet_type,
    kind: creator ? "creator_balance" : "user_wallet",
    identity_source: creator ? "participant_identity_links" : "user_wallet",
    owner_id: row.owner_id,
    owner_type: row.owner_type,
    external_user_id: row.external_user_id,
    customer_email: row.customer_email,
    permissions: row.permissions,
    status: walletSessionStatus(row, now),
    wallet_url: `${altBaseUrl}/v1/wallet/${row.id}`,
    success_url: row.success_url,
    cancel_url: row.cancel_url,
    expires_at: row.expires_at.toISOString(),
    created_at: row.created_at.toISOString(),
    livemode: row.livemode,
    metadata: row.metadata,
  };
}

async function resolveWallet(deps: PaymentsDeps, tenant: Tenant, body: Body): Promise<LedgerWallet> {
  const creatorSession = body.owner_type === "participant" || body.owner_type === "creator";
  const owner = body.owner_id ?? body.external_user_id;
  if (body.wallet_id !== undefined) {
    const w = await deps.ledger.getWallet(tenant, body.wallet_id);
    if (owner !== undefined && w.owner_id !== owner) throw invalid("owner_id", "does not own wallet_id");
    return w;
  }
  if (creatorSession) {
    if (owner === undefined) throw invalid("owner_id", "a creator session needs owner_id (the participant id)");
    const p = await deps.ledger.getParticipant(tenant, owner);
    return deps.ledger.getWallet(tenant, p.wallet_id);
  }
  if (owner !== undefined) {
    return (
      (await deps.ledger.findWallet(tenant, owner, "consumer_credit")) ?? deps.ledger.upsertConsumerWallet(tenant, owner, body.owner_type ?? "user", owner)
    );
  }
  if (body.customer_email !== undefined) {
    if (tenant.livemode)
      throw invalid("owner_id", "live sessions need wallet_id, owner_id or external_user_id", "Only sandbox sessions derive a test wallet from customer_email");
    const derived = sandboxOwnerForEmail(body.customer_email);
    return (
      (await deps.ledger.findWallet(tenant, derived, "consumer_credit")) ?? deps.ledger.upsertConsumerWallet(tenant, derived, "consumer", body.customer_email)
    );
  }
  throw invalid("wallet_id", "wallet_id, owner_id, external_user_id or (sandbox) customer_email is required");
}

/** The session as answered when it was created (a replay of its idempotency_key answers the same), and whether this request was a replay. */
export interface CreatedWalletSession {
  walletSession: Record<string, unknown>;
  replayed: boolean;
}

export async function createWalletSession(deps: PaymentsDeps, tenant: Tenant, body: Body, altBaseUrl: string): Promise<CreatedWalletSession> {
  const hash = requestHash(body);
  const replay = (row: WalletSessionRow): CreatedWalletSession => {
    if (row.request_hash !== hash) {
      throw new DomainError("idempotency_conflict", `idempotency_key ${row.idempotency_key ?? ""} was used with a different request`);
    }
    return { walletSession: row.create_response ?? presentWalletSession(row, altBaseUrl, deps.now()), replayed: true };
  };
  if (body.idempotency_key !== undefined) {
    const existing = await deps.walletSessions.findByKey(tenant, body.idempotency_key);
    if (existing !== undefined) return replay(existing);
  }
  // Before the wallet is resolved: resolving may create the buyer's wallet, and a refused body stores nothing.
  const badUrl = liveReturnUrlProblem(body, tenant.livemode);
  if (badUrl !== undefined) throw invalid(badUrl.path, badUrl.message);
  const wallet = await resolveWallet(deps, tenant, body);
  const creator = wallet.wallet_type === "creator_earnings";
  const permissions = body.permissions ?? (creator ? CREATOR_PERMISSIONS : BUYER_PERMISSIONS);
  if (creator && permissions.includes("top_up"))
    throw invalid("permissions", "creator earnings wallets cannot be topped up", "Creator earnings come from sales; omit top_up");
  const now = deps.now();
  const row = await deps.walletSessions.insert({
    id: newId("wals"),
    org_id: tenant.orgId,
    livemode: tenant.livemode,
    wallet_id: wallet.id,
    wallet_type: wallet.wallet_type,
    owner_id: wallet.owner_id,
    owner_type: wallet.owner_type,
    external_user_id: body.external_user_id ?? null,
    customer_email: body.customer_email ?? null,
    permissions: [...new Set(permissions)],
    success_url: body.success_url ?? null,
    cancel_url: body.cancel_url ?? null,
    metadata: body.metadata ?? {},
    idempotency_key: body.idempotency_key ?? null,
    request_hash: hash,
    expires_at: new Date(now.getTime() + (body.expires_in_minutes ?? WALLET_SESSION_MINUTES_DEFAULT) * 60_000),
  });
  if (row === undefined) {
    const existing = body.idempotency_key === undefined ? undefined : await deps.walletSessions.findByKey(tenant, body.idempotency_key);
    if (existing === undefined) throw new Error("wallet session insert conflicted without an idempotency key");
    return replay(existing);
  }
  const presented = presentWalletSession(row, altBaseUrl, now);
  await deps.walletSessions.storeResponse(row.id, presented);
  return { walletSession: presented, replayed: false };
}
