/**
 * The ledger as payments sees it (LedgerClient of usecases/ports.ts): the kit's ledger port (`svc.ledger.post`, the
 * only way money moves, and the ledger's public operations on their internal subjects, with explicit deadlines and
 * the kit's error mapping), with the answers read into payments' types and participants' immutable facts cached.
 */
import type { Tenant } from "@treasury/contracts";
import { natsLedgerPort, type LedgerPort, type NatsConnection } from "@treasury/service-kit";
import type { LedgerClient, LedgerParticipant, LedgerWallet, ParticipantInfo } from "../usecases/ports.ts";

const PARTICIPANT_CACHE_MAX = 10_000;
const PARTICIPANT_CACHE_TTL_MS = 60_000;

export function natsLedger(nc: NatsConnection, prefix: string, timeoutMs: number): LedgerClient {
  return ledgerClient(natsLedgerPort(nc, prefix, { caller: "payments", timeoutMs }));
}

export function ledgerClient(port: LedgerPort): LedgerClient {
  const participants = new Map<string, { at: number; info: ParticipantInfo }>();
  const getParticipant = async (tenant: Tenant, participantId: string) =>
    (await port.operation(tenant, "getParticipant", { params: { participant_id: participantId } }))["participant"] as LedgerParticipant;

  return {
    participantInfo: async (tenant, participantId) => {
      const key = `${tenant.orgId}\u0000${String(tenant.livemode)}\u0000${participantId}`;
      const hit = participants.get(key);
      if (hit !== undefined && Date.now() - hit.at < PARTICIPANT_CACHE_TTL_MS) return hit.info;
      const p = await getParticipant(tenant, participantId);
      const info = { id: p.id, wallet_id: p.wallet_id, display_name: p.display_name, default_split_percent: p.default_split_percent };
      // Only found participants are cached (a 404 throws above), so a participant created later is seen at once.
      if (participants.size >= PARTICIPANT_CACHE_MAX) participants.clear();
      participants.set(key, { at: Date.now(), info });
      return info;
    },
    post: (req) => port.post(req),
    getParticipant,
    findWallet: async (tenant, ownerId, walletType) => {
      const body = await port.operation(tenant, "listWallets", { query: { owner_id: ownerId, wallet_type: walletType, limit: 1 } });
      return (body["wallets"] as LedgerWallet[] | undefined)?.[0];
    },
    getWallet: async (tenant, walletId) => (await port.operation(tenant, "getWallet", { params: { wallet_id: walletId } }))["wallet"] as LedgerWallet,
    upsertConsumerWallet: async (tenant, ownerId, ownerType, name) =>
      (await port.operation(tenant, "createWallet", { body: { owner_id: ownerId, owner_type: ownerType, wallet_type: "consumer_credit", name } }))[
        "wallet"
      ] as LedgerWallet,
    listEntries: async (tenant, walletId, limit) =>
      ((await port.operation(tenant, "listWalletEntries", { params: { wallet_id: walletId }, query: { limit } }))["entries"] as
        | Record<string, unknown>[]
        | undefined) ?? [],
    topUp: async (tenant, walletId, amount, referenceId, description) =>
      (
        await port.operation(
          tenant,
          "depositToWallet",
          { params: { wallet_id: walletId }, body: { amount, reference_id: referenceId, description } },
          { movesMoney: true },
        )
      )["topup"] as Record<string, unknown>,
  };
}
