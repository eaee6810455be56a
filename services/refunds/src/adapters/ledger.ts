/**
 * The ledger as refunds sees it: `svc.ledger.post` with a refund request, over NATS with an explicit deadline.
 * A ledger domain error comes back as the same DomainError; a timeout or an absent ledger is
 * LedgerOutcomeUnknown (never "failed": the same request is sent again later).
 */
import { DomainError, ledgerPostSubject, type PostRequestInput } from "@treasury/contracts";
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
}

export function natsLedger(nc: NatsConnection, prefix: string, timeoutMs: number): LedgerClient {
  return {
    postRefund: async (req) => {
      const reply = await rpcCall(nc, ledgerPostSubject(prefix), req, { timeoutMs });
      if (reply.ok) return RefundPosted.parse(reply.body);
      const { code, message, hint, details, extra } = reply.error;
      if (code === "service_timeout" || code === "service_unavailable") throw new LedgerOutcomeUnknown(code);
      throw new DomainError(code, message, { ...(hint !== undefined ? { hint } : {}), ...(details !== undefined ? { details } : {}), ...(extra !== undefined ? { extra } : {}) });
    },
  };
}
