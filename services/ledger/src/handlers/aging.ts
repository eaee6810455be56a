/**
 * What the ledger answers and asks the invoicing service (only invoicing may read these: INTERNAL_CALLS):
 * `svc.ledger.internal.receivableBalances` and `…openBills`, the receivables and bills aging reads as of a time;
 * and the invoicing adapter the reconciliation asks when a bank line names an invoice (usecases/invoice-lines.ts).
 */
import { internalSubject, parseOrThrow, schemas, tenantOf } from "@treasury/contracts";
import { rpcCall, type Service } from "@treasury/service-kit";
import { openBills, receivableBalances, type AgingReader } from "../usecases/aging.ts";
import type { InvoiceLineMatcher } from "../usecases/invoice-lines.ts";

export function registerAgingReads(svc: Pick<Service, "handleInternal">, reader: AgingReader): void {
  svc.handleInternal(
    schemas.RECEIVABLE_BALANCES_OPERATION,
    (payload) => parseOrThrow(schemas.ReceivableBalancesRequest, payload),
    async (req) => ({ receivables: await receivableBalances(reader, tenantOf(req), new Date(req.as_of)) }),
  );
  svc.handleInternal(
    schemas.OPEN_BILLS_OPERATION,
    (payload) => parseOrThrow(schemas.OpenBillsRequest, payload),
    async (req) => ({ bills: await openBills(reader, tenantOf(req), new Date(req.as_of)) }),
  );
}

/** Deadline of one invoice look-up during an auto-match run. */
const MATCH_TIMEOUT_MS = 5_000;

/**
 * `svc.invoicing.internal.matchBankLine`. A refusal or no answer leaves the line to the ordinary matching: the
 * payment is idempotent on the bank line, so a payment recorded without its answer is found by the next run.
 */
export function natsInvoiceLines(svc: Pick<Service, "nc" | "prefix" | "log">): InvoiceLineMatcher {
  return {
    async matchBankLine(request) {
      try {
        const reply = await rpcCall(svc.nc, internalSubject(svc.prefix, "invoicing", schemas.MATCH_BANK_LINE_OPERATION), request, {
          timeoutMs: MATCH_TIMEOUT_MS,
        });
        if (reply.ok) return reply.body as schemas.MatchBankLineAnswer;
        svc.log.warn({ bank_line_id: request.bank_line_id, code: reply.error.code }, "invoicing did not record the bank line's payment");
        return { matched: false, reason: reply.error.code };
      } catch (e) {
        svc.log.warn({ bank_line_id: request.bank_line_id, err: e }, "invoicing could not be asked about a bank line");
        return { matched: false, reason: "unavailable" };
      }
    },
  };
}
