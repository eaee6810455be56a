/**
 * The ledger as every other service sees it: the one port through which they ask it to move money or read it.
 * Money moves only through `svc.ledger.post` (post) and the few public operations that post (operation with
 * movesMoney). A ledger refusal comes back as the same DomainError (code, hint, details, extra). A ledger that
 * does not answer is LedgerOutcomeUnknown where money may have moved (never "failed": the caller sends the same
 * request again later, and the ledger answers the first result), and a retryable service_unavailable for a read
 * (nothing was stored).
 */
import {
  DomainError,
  internalSubject,
  ledgerPostSubject,
  newRequestId,
  type PostRequestInput,
  type PostResult,
  type RpcReply,
  type Tenant,
} from "@treasury/contracts";
import type { NatsConnection } from "@nats-io/transport-node";
import { rpcCall } from "./rpc-client.ts";

export class LedgerOutcomeUnknown extends Error {
  constructor(readonly code: string) {
    super(`ledger did not answer (${code}); the outcome is unknown`);
    this.name = "LedgerOutcomeUnknown";
  }
}

/** What the ledger answers a post: the transaction, and whether it was a replay of an earlier identical post. */
export type LedgerPosted = PostResult & { duplicate: boolean };

export interface LedgerRequest {
  params?: Record<string, string>;
  query?: Record<string, unknown>;
  body?: unknown;
}

export interface LedgerPort {
  /** One `svc.ledger.post`: balanced entries under the request's reference, at most once. */
  post(req: PostRequestInput): Promise<LedgerPosted>;
  /** A public ledger operation (getParticipant, depositToWallet…) on its internal subject, for the tenant. */
  operation(tenant: Tenant, operation: string, req: LedgerRequest, opts?: { movesMoney?: boolean }): Promise<Record<string, unknown>>;
  /** An internal-only ledger read whose payload is not a gateway request (sale summaries, transaction records). */
  read(operation: string, payload: unknown): Promise<Record<string, unknown>>;
}

export interface NatsLedgerOptions {
  /** The calling service: named in the internal auth context (`svc_<caller>`) and so in the ledger's logs. */
  caller: string;
  timeoutMs: number;
}

function refusal(error: Extract<RpcReply, { ok: false }>["error"]): DomainError {
  const { code, message, hint, details, extra } = error;
  return new DomainError(code, message, {
    ...(hint !== undefined ? { hint } : {}),
    ...(details !== undefined ? { details } : {}),
    ...(extra !== undefined ? { extra } : {}),
  });
}

const unavailable = (): DomainError => new DomainError("service_unavailable", "The ledger did not answer; retry the request");

export function natsLedgerPort(nc: NatsConnection, prefix: string, opts: NatsLedgerOptions): LedgerPort {
  const { timeoutMs } = opts;
  const call = async (subject: string, payload: unknown, movesMoney: boolean): Promise<Record<string, unknown>> => {
    const reply = await rpcCall(nc, subject, payload, { timeoutMs });
    if (reply.ok) return reply.body;
    if (reply.error.code === "service_timeout" || reply.error.code === "service_unavailable") {
      throw movesMoney ? new LedgerOutcomeUnknown(reply.error.code) : unavailable();
    }
    throw refusal(reply.error);
  };
  return {
    post: async (req) => (await call(ledgerPostSubject(prefix), req, true)) as unknown as LedgerPosted,
    operation: (tenant, operation, req, o = {}) => {
      const auth = { org_id: tenant.orgId, livemode: tenant.livemode, key_id: `svc_${opts.caller}`, scopes: null, request_id: newRequestId() };
      const payload = { auth, params: req.params ?? {}, query: req.query ?? {}, body: req.body ?? {}, deadline: Date.now() + timeoutMs };
      return call(internalSubject(prefix, "ledger", operation), payload, o.movesMoney === true);
    },
    read: (operation, payload) => call(internalSubject(prefix, "ledger", operation), payload, false),
  };
}
