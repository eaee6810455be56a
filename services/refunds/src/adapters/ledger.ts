/**
 * The ledger as refunds sees it: `svc.ledger.post` with a refund request, over NATS with an explicit deadline.
 * A ledger domain error comes back as the same DomainError; a timeout or an absent ledger is
 * LedgerOutcomeUnknown (never "failed": the same request is sent again later).
 */
import { DomainError, internalSubject, ledgerPostSubject, newRequestId, schemas, type PostRequestInput } from "@treasury/contracts";
import { rpcCall, type NatsConnection } from "@treasury/service-kit";
import { z } from "zod";

export class LedgerOutcomeUnknown extends Error {
  constructor(readonly code: string) {
    super(`ledger did not answer (${code}); the outcome is unknown`);
    this.name = "LedgerOutcomeUnknown";
  }
}

const int = z.number().int().nonnegative();

/** What the ledger answers for a refund (PostResult with `extra.refund`), checked before it is stored. */
export const RefundPosted = z.object({
  transaction_id: z.string().min(1),
  amount: int,
  duplicate: z.boolean(),
  extra: z.object({
    refund: z.object({
      sale_reference: z.string(),
      sale_transaction_id: z.string(),
      participant_id: z.string().nullable(),
      amount: int,
      from_creator: int,
      from_platform: int,
      sales_tax: int,
      remaining_amount: int,
      is_full_refund: z.boolean(),
      sale_gross: int,
    }),
    hold_amount_used: int.default(0),
    creator_receivable_amount: int.default(0),
  }),
});
export type RefundPosted = z.infer<typeof RefundPosted>;

export interface LedgerClient {
  postRefund(req: PostRequestInput): Promise<RefundPosted>;
  /** The sale as the ledger keeps it (original_sale_not_found when the org and environment have none). */
  saleSummary(scope: { orgId: string; livemode: boolean }, saleReference: string): Promise<schemas.SaleSummary>;
  /**
   * Reverses a transaction in full (the ledger's reverse-transaction) under an idempotency key; a repeat answers the
   * reversal made first. Answers the reversal's transaction id.
   */
  reverseTransaction(scope: { orgId: string; livemode: boolean }, req: { transaction_id: string; idempotency_key: string; reason: string }): Promise<string>;
}

export function natsLedger(nc: NatsConnection, prefix: string, timeoutMs: number): LedgerClient {
  return {
    reverseTransaction: async (scope, body) => {
      const auth = { org_id: scope.orgId, livemode: scope.livemode, key_id: "svc_refunds", scopes: null, request_id: newRequestId() };
      const payload = { auth, params: {}, query: {}, body, deadline: Date.now() + timeoutMs };
      const reply = await rpcCall(nc, internalSubject(prefix, "ledger", "reverseTransaction"), payload, { timeoutMs });
      if (reply.ok) return String(reply.body["transaction_id"]);
      const { code, message, extra } = reply.error;
      // This reversal was made before (a replay of the key, or the refund already reversed): its id is the answer.
      if (code === "duplicate_reversal_reference" && typeof extra?.["existing_transaction_id"] === "string") return extra["existing_transaction_id"];
      if (code === "service_timeout" || code === "service_unavailable") throw new LedgerOutcomeUnknown(code);
      throw new DomainError(code, message);
    },
    saleSummary: async (scope, saleReference) => {
      const payload = { org_id: scope.orgId, livemode: scope.livemode, sale_reference: saleReference };
      const reply = await rpcCall(nc, internalSubject(prefix, "ledger", schemas.SALE_SUMMARY_OPERATION), payload, { timeoutMs });
      if (reply.ok) return reply.body["sale"] as schemas.SaleSummary;
      // A read changes nothing: a ledger that does not answer is simply unavailable (503, retry).
      throw new DomainError(reply.error.code === "service_timeout" ? "service_unavailable" : reply.error.code, reply.error.message);
    },
    postRefund: async (req) => {
      const reply = await rpcCall(nc, ledgerPostSubject(prefix), req, { timeoutMs });
      if (reply.ok) return RefundPosted.parse(reply.body);
      const { code, message, hint, details, extra } = reply.error;
      if (code === "service_timeout" || code === "service_unavailable") throw new LedgerOutcomeUnknown(code);
      throw new DomainError(code, message, {
        ...(hint !== undefined ? { hint } : {}),
        ...(details !== undefined ? { details } : {}),
        ...(extra !== undefined ? { extra } : {}),
      });
    },
  };
}
