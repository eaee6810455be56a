/**
 * The ledger as refunds sees it: a thin typed layer over the kit's ledger port (`svc.ledger.post` with a refund
 * request, the reverse-transaction operation and the sale summary read), with an explicit deadline. A ledger
 * refusal comes back as the ledger's DomainError; no answer where money may move is the kit's
 * LedgerOutcomeUnknown (never "failed": the same request is sent again later).
 */
import { DomainError, schemas } from "@treasury/contracts";
import { natsLedgerPort, type LedgerPort, type NatsConnection } from "@treasury/service-kit";
import { z } from "zod";
import type { RefundPosted, RefundsLedger } from "../usecases/ports.ts";

const int = z.number().int().nonnegative();

/** What the ledger answers for a refund (PostResult with `extra.refund`), checked before it is stored. */
export const RefundPostedAnswer = z.object({
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

/** The ledger's refusal as refunds answers it on: its code and message only. */
function plain(e: unknown): unknown {
  return e instanceof DomainError ? new DomainError(e.code, e.message) : e;
}

export function ledgerOver(port: LedgerPort): RefundsLedger {
  return {
    postRefund: async (req): Promise<RefundPosted> => RefundPostedAnswer.parse(await port.post(req)),
    saleSummary: async (tenant, saleReference) => {
      const payload = { org_id: tenant.orgId, livemode: tenant.livemode, sale_reference: saleReference };
      try {
        return (await port.read(schemas.SALE_SUMMARY_OPERATION, payload))["sale"] as schemas.SaleSummary;
      } catch (e) {
        // A read changes nothing: a ledger that does not answer is simply unavailable (503, retry).
        throw plain(e);
      }
    },
    reverseTransaction: async (tenant, body) => {
      try {
        return String((await port.operation(tenant, "reverseTransaction", { body }, { movesMoney: true }))["transaction_id"]);
      } catch (e) {
        // This reversal was made before (a replay of the key, or the refund already reversed): its id is the answer.
        const existing = e instanceof DomainError && e.code === "duplicate_reversal_reference" ? e.extra?.["existing_transaction_id"] : undefined;
        if (typeof existing === "string") return existing;
        throw plain(e);
      }
    },
  };
}

export function natsLedger(nc: NatsConnection, prefix: string, timeoutMs: number): RefundsLedger {
  return ledgerOver(natsLedgerPort(nc, prefix, { caller: "refunds", timeoutMs }));
}
