/** Wallet top-ups, withdrawals and transfers: each one posting through the engine. */
import { DomainError, type PostOutcome, type PostRequestInput, type schemas, type Tenant } from "@treasury/contracts";
import type { z } from "zod";
import type { LedgerDeps } from "./deps.ts";
import type { WalletRow } from "./rows.ts";
import { loadWallet } from "./wallets.ts";

type MovementBody = z.output<typeof schemas.WalletMovementBody>;
type TransferBody = z.output<typeof schemas.TransferBody>;
export type MovementDeps = Pick<LedgerDeps, "wallets" | "poster" | "risk">;

export const KIND_TOPUP = "wallet_topup";
export const KIND_WITHDRAWAL = "wallet_withdrawal";
export const KIND_TRANSFER = "transfer";

/** A replay of a reference_id operation: 409 with the original resource under its key. */
export function duplicateReference(outcome: PostOutcome, key: string, resource: Record<string, unknown>): DomainError {
  return new DomainError("duplicate_reference_id", `A transaction with reference_id ${outcome.result.reference_id} exists`, {
    extra: { existing_transaction_id: outcome.result.transaction_id, [key]: resource },
  });
}

function balanceOf(outcome: PostOutcome, walletId: string): { balance: number; available_balance: number } {
  const w = outcome.result.wallets[walletId];
  if (w === undefined) throw new Error(`posting result lacks wallet ${walletId}`);
  return { balance: w.balance, available_balance: w.available_balance };
}

/**
 * Whom risk counts a movement against: the wallet's participant, else its owner as the buyer. Risk is asked before
 * the post, keyed by the reference_id (the movement's idempotency key), so a replay is the same evaluation.
 */
function whose(w: WalletRow): { participant_id: string } | { buyer_id: string } {
  return w.participant_id !== null ? { participant_id: w.participant_id } : { buyer_id: w.owner_id };
}

function base(tenant: Tenant, kind: string, body: { reference_id: string; description?: string | undefined; metadata?: Record<string, unknown> | undefined }) {
  return {
    org_id: tenant.orgId,
    livemode: tenant.livemode,
    kind,
    reference_id: body.reference_id,
    ...(body.description !== undefined ? { description: body.description } : {}),
    ...(body.metadata !== undefined ? { metadata: body.metadata } : {}),
  };
}

/**
 * Tops up a consumer wallet. Sandbox: a simulated card, posted from the sandbox_funding account. Live:
 * refused, funding goes through hosted checkout.
 * Errors: wallet_not_found, wallet_not_topupable, topup_requires_checkout, wallet_not_active,
 * duplicate_reference_id, idempotency_conflict.
 */
export async function depositToWallet(deps: MovementDeps, tenant: Tenant, walletId: string, body: MovementBody) {
  const wallet = await loadWallet(deps, tenant, walletId);
  if (wallet.account_type !== "consumer_credit" || !wallet.topup_supported) {
    throw new DomainError("wallet_not_topupable", `Wallet ${wallet.id} (${wallet.account_type}) does not support top-ups`);
  }
  if (tenant.livemode) {
    throw new DomainError("topup_requires_checkout", "Live top-ups go through hosted checkout", {
      hint: 'POST /v1/wallet-sessions with wallet_id and permissions ["top_up"] opens the hosted wallet page that funds it',
    });
  }
  const request: PostRequestInput = {
    ...base(tenant, KIND_TOPUP, body),
    postings: [{ debit: { system: "sandbox_funding" }, credit: { wallet_id: wallet.id }, amount: body.amount }],
  };
  const outcome = await deps.poster.post(request);
  const topup = {
    wallet_id: wallet.id,
    owner_id: wallet.owner_id,
    transaction_id: outcome.result.transaction_id,
    amount: body.amount,
    ...balanceOf(outcome, wallet.id),
  };
  if (outcome.duplicate) throw duplicateReference(outcome, "topup", topup);
  return { topup };
}

/**
 * Withdraws from a redeemable consumer wallet: the money leaves to the buyer (sandbox: back to the simulated
 * card; live: out of platform cash). Creator earnings leave through payouts.
 * Errors: wallet_not_found, wallet_withdrawal_not_supported, wallet_not_redeemable, insufficient_balance,
 * wallet_not_active, duplicate_reference_id, idempotency_conflict, risk_denied, risk_unavailable.
 */
export async function withdrawFromWallet(deps: MovementDeps, tenant: Tenant, walletId: string, body: MovementBody) {
  const wallet = await loadWallet(deps, tenant, walletId);
  if (wallet.account_type === "creator_earnings") {
    throw new DomainError("wallet_withdrawal_not_supported", "Creator earnings leave through payouts", {
      hint: "POST /v1/payouts with participant_id and amount",
    });
  }
  if (!wallet.redeemable) throw new DomainError("wallet_not_redeemable", `Wallet ${wallet.id} is not redeemable`);
  await deps.risk.check(tenant, { operation: "withdrawal", key: `withdrawal:${body.reference_id}`, amount: body.amount, ...whose(wallet) });
  const request: PostRequestInput = {
    ...base(tenant, KIND_WITHDRAWAL, body),
    postings: [{ debit: { wallet_id: wallet.id }, credit: { system: tenant.livemode ? "platform_cash" : "sandbox_funding" }, amount: body.amount }],
  };
  const outcome = await deps.poster.post(request);
  const withdrawal = {
    wallet_id: wallet.id,
    owner_id: wallet.owner_id,
    transaction_id: outcome.result.transaction_id,
    amount: body.amount,
    ...balanceOf(outcome, wallet.id),
  };
  if (outcome.duplicate) throw duplicateReference(outcome, "withdrawal", withdrawal);
  return { withdrawal };
}

async function transferEnd(
  deps: Pick<LedgerDeps, "wallets">,
  tenant: Tenant,
  walletId: string | undefined,
  participantId: string | undefined,
  side: "from" | "to",
): Promise<WalletRow> {
  if (walletId !== undefined) return loadWallet(deps, tenant, walletId);
  if (participantId !== undefined) {
    const w = await deps.wallets.findCreator(tenant, participantId);
    if (w === undefined) throw new DomainError("participant_not_found", `Participant ${participantId} not found`);
    return w;
  }
  throw new DomainError("validation_error", `${side}_wallet_id or ${side}_participant_id is required`, {
    details: [{ path: `${side}_wallet_id`, message: `${side}_wallet_id or ${side}_participant_id is required` }],
  });
}

/**
 * Moves money between two transferable wallets, named by wallet ids or participant ids.
 * Errors: validation_error, wallet_not_found, participant_not_found, transfer_to_self, wallet_not_transferable,
 * insufficient_balance, wallet_not_active, duplicate_reference_id, idempotency_conflict, risk_denied, risk_unavailable.
 */
export async function transferBetweenWallets(deps: MovementDeps, tenant: Tenant, body: TransferBody) {
  const from = await transferEnd(deps, tenant, body.from_wallet_id, body.from_participant_id, "from");
  const to = await transferEnd(deps, tenant, body.to_wallet_id, body.to_participant_id, "to");
  if (from.id === to.id) throw new DomainError("transfer_to_self", "Cannot transfer a wallet to itself");
  for (const w of [from, to]) {
    if (!w.transferable) throw new DomainError("wallet_not_transferable", `Wallet ${w.id} does not permit transfers`, { extra: { wallet_id: w.id } });
  }
  await deps.risk.check(tenant, { operation: "transfer", key: `transfer:${body.reference_id}`, amount: body.amount, ...whose(from) });
  const request: PostRequestInput = {
    ...base(tenant, KIND_TRANSFER, body),
    postings: [{ debit: { wallet_id: from.id }, credit: { wallet_id: to.id }, amount: body.amount }],
  };
  const outcome = await deps.poster.post(request);
  const transfer = {
    transaction_id: outcome.result.transaction_id,
    from_wallet_id: from.id,
    to_wallet_id: to.id,
    amount: body.amount,
    from_balance: balanceOf(outcome, from.id).balance,
    to_balance: balanceOf(outcome, to.id).balance,
  };
  if (outcome.duplicate) throw duplicateReference(outcome, "transfer", transfer);
  return { transfer };
}
