/**
 * The ledger as payouts sees it (usecases/ports.ts LedgerClient), a typed layer over the kit's natsLedgerPort:
 * `svc.ledger.post` (the only way money moves; no answer is the kit's LedgerOutcomeUnknown) and reads of
 * participants (one, or a batch's balances at once), wallets and wallet entries on their internal subjects (no
 * answer is a retryable service_unavailable).
 */
import { schemas } from "@treasury/contracts";
import { natsLedgerPort, type NatsConnection } from "@treasury/service-kit";
import type { LedgerClient, LedgerParticipant, LedgerWallet, WalletEntry } from "../usecases/ports.ts";

export function natsLedger(nc: NatsConnection, prefix: string, timeoutMs: number): LedgerClient {
  const port = natsLedgerPort(nc, prefix, { caller: "payouts", timeoutMs });
  return {
    post: (req) => port.post(req),
    getParticipant: async (tenant, participantId) =>
      (await port.operation(tenant, "getParticipant", { params: { participant_id: participantId } }))["participant"] as LedgerParticipant,
    participantBalances: async (tenant, participantIds) => {
      const payload = { org_id: tenant.orgId, livemode: tenant.livemode, participant_ids: participantIds };
      const body = await port.read(schemas.PARTICIPANT_BALANCES_OPERATION, payload);
      return new Map(((body["participants"] as LedgerParticipant[] | undefined) ?? []).map((p) => [p.id, p]));
    },
    getWallet: async (tenant, walletId) => (await port.operation(tenant, "getWallet", { params: { wallet_id: walletId } }))["wallet"] as LedgerWallet,
    sandboxAdvance: async (tenant) => {
      const body = await port.operation(tenant, "getSandboxClock", {});
      return Number((body["clock"] as { advanced_by_seconds?: number } | undefined)?.advanced_by_seconds ?? 0);
    },
    listWalletEntries: async (tenant, walletId, page) => {
      const body = await port.operation(tenant, "listWalletEntries", { params: { wallet_id: walletId }, query: page });
      return { entries: (body["entries"] as WalletEntry[] | undefined) ?? [], total: Number(body["total"] ?? 0) };
    },
  };
}
