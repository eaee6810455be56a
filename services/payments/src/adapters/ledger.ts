/**
 * The ledger as payments sees it: `svc.ledger.post` (the only way money moves) and a few reads/commands of
 * the ledger's public operations on their internal subjects (`svc.ledger.internal.<operation>`), all over NATS with explicit deadlines. A ledger domain error comes back as
 * the same DomainError; a timeout or an absent ledger is LedgerOutcomeUnknown (never "failed").
 */
import { DomainError, internalSubject, ledgerPostSubject, newRequestId, type AuthContext, type PostRequestInput, type PostResult } from "@treasury/contracts";
import { rpcCall, type NatsConnection } from "@treasury/service-kit";

export class LedgerOutcomeUnknown extends Error {
  constructor(readonly code: string) {
    super(`ledger did not answer (${code}); the outcome is unknown`);
    this.name = "LedgerOutcomeUnknown";
  }
}

export interface Scope {
  orgId: string;
  livemode: boolean;
}

export interface LedgerWallet {
  id: string;
  wallet_type: "consumer_credit" | "creator_earnings";
  owner_id: string;
  owner_type: string | null;
  participant_id: string | null;
  status: string;
  balance: number;
  held_amount: number;
  available_balance: number;
  topup_supported: boolean;
  [k: string]: unknown;
}

export interface LedgerParticipant {
  id: string;
  display_name: string | null;
  default_split_percent: number | null;
  wallet_id: string;
  [k: string]: unknown;
}

export interface LedgerClient {
  post(req: PostRequestInput): Promise<PostResult & { duplicate: boolean }>;
  getParticipant(scope: Scope, participantId: string): Promise<LedgerParticipant>;
  /**
   * The participant's immutable facts (existence, wallet id, display name, default split), cached briefly:
   * a participant is never changed or deleted once created (docs/api.md, Participants and wallets), so a cached answer stays true.
   * Balances are not part of it; read them with getParticipant.
   */
  participantInfo(scope: Scope, participantId: string): Promise<Pick<LedgerParticipant, "id" | "wallet_id" | "display_name" | "default_split_percent">>;
  findWallet(scope: Scope, ownerId: string, walletType: "consumer_credit" | "creator_earnings"): Promise<LedgerWallet | undefined>;
  getWallet(scope: Scope, walletId: string): Promise<LedgerWallet>;
  upsertConsumerWallet(scope: Scope, ownerId: string, ownerType: string, name: string): Promise<LedgerWallet>;
  listEntries(scope: Scope, walletId: string, limit: number): Promise<Record<string, unknown>[]>;
  topUp(scope: Scope, walletId: string, amount: number, referenceId: string, description: string): Promise<Record<string, unknown>>;
}

/** Internal calls carry an auth context of the org+environment the work belongs to. */
function internalAuth(scope: Scope): AuthContext {
  return { org_id: scope.orgId, livemode: scope.livemode, key_id: "svc_payments", scopes: null, request_id: newRequestId() };
}

const PARTICIPANT_CACHE_MAX = 10_000;
const PARTICIPANT_CACHE_TTL_MS = 60_000;

export function natsLedger(nc: NatsConnection, prefix: string, timeoutMs: number): LedgerClient {
  const participants = new Map<string, { at: number; info: Pick<LedgerParticipant, "id" | "wallet_id" | "display_name" | "default_split_percent"> }>();
  /**
   * A ledger that does not answer is "outcome unknown" for what moves money (post, top-up) and a retryable
   * service_unavailable for everything else: nothing was stored, and an unknown error would be a 500.
   */
  async function raw(
    subject: string,
    payload: unknown,
    unknownOutcome: (code: string) => Error = (code) => new LedgerOutcomeUnknown(code),
  ): Promise<Record<string, unknown>> {
    const reply = await rpcCall(nc, subject, payload, { timeoutMs });
    if (reply.ok) return reply.body;
    const { code, message, hint, details, extra } = reply.error;
    if (code === "service_timeout" || code === "service_unavailable") throw unknownOutcome(code);
    throw new DomainError(code, message, {
      ...(hint !== undefined ? { hint } : {}),
      ...(details !== undefined ? { details } : {}),
      ...(extra !== undefined ? { extra } : {}),
    });
  }
  const readFailed = () => new DomainError("service_unavailable", "The ledger did not answer; retry the request");
  const op = (scope: Scope, operation: string, req: { params?: Record<string, string>; query?: Record<string, unknown>; body?: unknown }, movesMoney = false) =>
    raw(
      internalSubject(prefix, "ledger", operation),
      {
        auth: internalAuth(scope),
        params: req.params ?? {},
        query: req.query ?? {},
        body: req.body ?? {},
        deadline: Date.now() + timeoutMs,
      },
      movesMoney ? undefined : readFailed,
    );

  const getParticipant = async (scope: Scope, participantId: string) =>
    (await op(scope, "getParticipant", { params: { participant_id: participantId } }))["participant"] as LedgerParticipant;

  return {
    participantInfo: async (scope, participantId) => {
      const key = `${scope.orgId}\u0000${String(scope.livemode)}\u0000${participantId}`;
      const hit = participants.get(key);
      if (hit !== undefined && Date.now() - hit.at < PARTICIPANT_CACHE_TTL_MS) return hit.info;
      const p = await getParticipant(scope, participantId);
      const info = { id: p.id, wallet_id: p.wallet_id, display_name: p.display_name, default_split_percent: p.default_split_percent };
      // Only found participants are cached (a 404 throws above), so a participant created later is seen at once.
      if (participants.size >= PARTICIPANT_CACHE_MAX) participants.clear();
      participants.set(key, { at: Date.now(), info });
      return info;
    },
    post: async (req) => (await raw(ledgerPostSubject(prefix), req)) as unknown as PostResult & { duplicate: boolean },
    getParticipant,
    findWallet: async (scope, ownerId, walletType) => {
      const body = await op(scope, "listWallets", { query: { owner_id: ownerId, wallet_type: walletType, limit: 1 } });
      return (body["wallets"] as LedgerWallet[] | undefined)?.[0];
    },
    getWallet: async (scope, walletId) => (await op(scope, "getWallet", { params: { wallet_id: walletId } }))["wallet"] as LedgerWallet,
    upsertConsumerWallet: async (scope, ownerId, ownerType, name) =>
      (await op(scope, "createWallet", { body: { owner_id: ownerId, owner_type: ownerType, wallet_type: "consumer_credit", name } }))["wallet"] as LedgerWallet,
    listEntries: async (scope, walletId, limit) =>
      ((await op(scope, "listWalletEntries", { params: { wallet_id: walletId }, query: { limit } }))["entries"] as Record<string, unknown>[] | undefined) ?? [],
    topUp: async (scope, walletId, amount, referenceId, description) =>
      (await op(scope, "depositToWallet", { params: { wallet_id: walletId }, body: { amount, reference_id: referenceId, description } }, true))[
        "topup"
      ] as Record<string, unknown>,
  };
}
