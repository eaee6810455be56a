/**
 * The ledger as payouts sees it: `svc.ledger.post` (the only way money moves) and reads of participants and
 * wallets on their internal subjects (`svc.ledger.internal.<operation>`), over NATS with explicit deadlines. A ledger domain error comes back as the same DomainError; a
 * timeout or an absent ledger is LedgerOutcomeUnknown for posts (never "failed") and service_unavailable for
 * reads (nothing was stored, the client may retry).
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
  participant_id: string | null;
  status: string;
  balance: number;
  held_amount: number;
  available_balance: number;
  payout_supported: boolean;
}

export interface LedgerParticipant {
  id: string;
  wallet_id: string;
  available_balance_cents: number;
}

export interface LedgerClient {
  post(req: PostRequestInput): Promise<PostResult & { duplicate: boolean }>;
  getParticipant(scope: Scope, participantId: string): Promise<LedgerParticipant>;
  getWallet(scope: Scope, walletId: string): Promise<LedgerWallet>;
}

/** Internal calls carry an auth context of the org+environment the work belongs to. */
export function internalAuth(scope: Scope): AuthContext {
  return { org_id: scope.orgId, livemode: scope.livemode, key_id: "svc_payouts", scopes: null, request_id: newRequestId() };
}

export function natsLedger(nc: NatsConnection, prefix: string, timeoutMs: number): LedgerClient {
  async function call(subject: string, payload: unknown, unknownOutcome: (code: string) => Error): Promise<Record<string, unknown>> {
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
  const op = (scope: Scope, operation: string, params: Record<string, string>) =>
    call(
      internalSubject(prefix, "ledger", operation),
      { auth: internalAuth(scope), params, query: {}, body: {}, deadline: Date.now() + timeoutMs },
      readFailed,
    );
  return {
    post: async (req) =>
      (await call(ledgerPostSubject(prefix), req, (code) => new LedgerOutcomeUnknown(code))) as unknown as PostResult & { duplicate: boolean },
    getParticipant: async (scope, participantId) => (await op(scope, "getParticipant", { participant_id: participantId }))["participant"] as LedgerParticipant,
    getWallet: async (scope, walletId) => (await op(scope, "getWallet", { wallet_id: walletId }))["wallet"] as LedgerWallet,
  };
}
