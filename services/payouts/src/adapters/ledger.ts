/**
 * The ledger as payouts sees it (usecases/ports.ts LedgerClient), a typed layer over the kit's natsLedgerPort:
 * `svc.ledger.post` (the only way money moves; no answer is the kit's LedgerOutcomeUnknown) and reads of
 * participants, wallets and wallet entries on their internal subjects (no answer is a retryable service_unavailable).
 */
import { natsLedgerPort, type NatsConnection } from "@treasury/service-kit";
import type { LedgerClient, LedgerParticipant, LedgerWallet, WalletEntry } from "../usecases/ports.ts";

export function natsLedger(nc: NatsConnection, prefix: string, timeoutMs: number): LedgerClient {
  const port = natsLedgerPort(nc, prefix, { caller: "payouts", timeoutMs });
  return {
    post: (req) => port.post(req),
    getParticipant: async (tenant, participantId) =>
      (await port.operation(tenant, "getParticipant", { params: { participant_id: participantId } }))["participant"] as LedgerParticipant,
    getWallet: async (tenant, walletId) => (await port.operation(tenant, "getWallet", { params: { wallet_id: walletId } }))["wallet"] as LedgerWallet,
    listWalletEntries: async (tenant, walletId, page) => {
      const body = await port.operation(tenant, "listWalletEntries", { params: { wallet_id: walletId }, query: page });
      return { entries: (body["entries"] as WalletEntry[] | undefined) ?? [], total: Number(body["total"] ?? 0) };
    },
  };
}
