/** Wallet reads and consumer wallet creation. */
import { DomainError, type schemas, type Tenant } from "@treasury/contracts";
import type { z } from "zod";
import { consumerCreditFlags } from "../domain/accounts.ts";
import { isUuid } from "../domain/ids.ts";
import type { LedgerDeps } from "./deps.ts";
import { presentWallet } from "./present.ts";
import { reserveFigures } from "./reserves.ts";
import type { WalletRow } from "./rows.ts";

type CreateWalletBody = z.output<typeof schemas.CreateWalletBody>;
type ListWalletsQuery = z.output<typeof schemas.ListWalletsQuery>;
export type WalletDeps = Pick<LedgerDeps, "wallets">;

export const WALLET_PAGE_DEFAULT = 25;

/** Errors: wallet_not_found (also for another org's or environment's wallet, and for a malformed id). */
export async function loadWallet(deps: WalletDeps, tenant: Tenant, walletId: string): Promise<WalletRow> {
  const w = isUuid(walletId) ? await deps.wallets.findById(tenant, walletId) : undefined;
  if (w === undefined) throw new DomainError("wallet_not_found", `Wallet ${walletId} not found`);
  return w;
}

/** A creator_earnings wallet also answers its reserve figures (usecases/reserves.ts), which payouts read. */
export async function getWallet(deps: WalletDeps & Pick<LedgerDeps, "holds" | "reserves">, tenant: Tenant, walletId: string): Promise<Record<string, unknown>> {
  const w = await loadWallet(deps, tenant, walletId);
  if (w.account_type !== "creator_earnings" || w.participant_id === null) return presentWallet(w);
  const [holds, [reserve]] = await Promise.all([deps.holds.activeOfWallets(tenant, [w.id]), deps.reserves.find(tenant, [w.participant_id])]);
  return { ...presentWallet(w), ...reserveFigures(reserve, holds, w.balance - w.held_amount) };
}

export async function listWallets(deps: WalletDeps, tenant: Tenant, query: ListWalletsQuery) {
  const limit = query.limit ?? WALLET_PAGE_DEFAULT;
  const offset = query.offset ?? 0;
  const { rows, total } = await deps.wallets.list(
    tenant,
    { ownerId: query.owner_id, ownerType: query.owner_type, walletType: query.wallet_type },
    limit,
    offset,
  );
  return { wallets: rows.map(presentWallet), total, limit, offset };
}

/**
 * Creates a consumer_credit wallet, or answers the owner's existing one (upsert on owner_id; an existing
 * wallet is never changed). Errors: creator_earnings_requires_participant.
 */
export async function createWallet(deps: WalletDeps, tenant: Tenant, body: CreateWalletBody): Promise<{ created: boolean; wallet: Record<string, unknown> }> {
  if (body.wallet_type === "creator_earnings") {
    throw new DomainError("creator_earnings_requires_participant", "creator_earnings wallets are created with their participant", {
      hint: "POST /v1/participants with participant_id creates the participant and its creator_earnings wallet",
    });
  }
  const inserted = await deps.wallets.insert(tenant, {
    type: "consumer_credit",
    ownerId: body.owner_id,
    ownerType: body.owner_type ?? "user",
    participantId: null,
    name: body.name ?? body.owner_id,
    flags: consumerCreditFlags({ redeemable: body.redeemable, transferable: body.transferable }),
    metadata: body.metadata ?? {},
  });
  if (inserted !== undefined) return { created: true, wallet: presentWallet(inserted) };
  const existing = await deps.wallets.findConsumer(tenant, body.owner_id);
  if (existing === undefined) throw new Error(`consumer wallet of ${body.owner_id} conflicted but is not visible`);
  return { created: false, wallet: presentWallet(existing) };
}

/** Errors: wallet_not_found. */
export async function listWalletEntries(deps: WalletDeps, tenant: Tenant, walletId: string, page: { limit?: number | undefined; offset?: number | undefined }) {
  const wallet = await loadWallet(deps, tenant, walletId);
  const limit = page.limit ?? WALLET_PAGE_DEFAULT;
  const offset = page.offset ?? 0;
  const { rows, total } = await deps.wallets.entries(tenant, wallet.id, limit, offset);
  // `status`: entries are never changed once posted (a reversal is a transaction of its own); the official SDK reads it.
  return { wallet: presentWallet(wallet), entries: rows.map((e) => ({ ...e, status: "posted" as const })), total, limit, offset };
}
