/**
 * Internal reads other services make over NATS (never routed by the gateway): `svc.ledger.internal.*`.
 * The payload names the org and environment itself, as `svc.ledger.post` does.
 */
import { DomainError, parseOrThrow, schemas } from "@treasury/contracts";
import type { Service } from "@treasury/service-kit";
import { domainErrorReply } from "@treasury/service-kit";
import { findSale } from "../store/sales.ts";
import { transactionRecord } from "../usecases/transaction-record.ts";

export function registerInternalReads(svc: Pick<Service, "sql" | "rpc">): void {
  svc.rpc.handleRaw(schemas.TRANSACTION_RECORD_OPERATION, async (payload) => {
    try {
      const req = parseOrThrow(schemas.TransactionRecordRequest, payload);
      const transaction = await transactionRecord(svc.sql, { orgId: req.org_id, livemode: req.livemode }, req.transaction_id);
      return { ok: true, status: 200, body: { transaction } };
    } catch (e) {
      if (e instanceof DomainError) return domainErrorReply(e);
      throw e;
    }
  });
  svc.rpc.handleRaw(schemas.SALE_SUMMARY_OPERATION, async (payload) => {
    try {
      const req = parseOrThrow(schemas.SaleSummaryRequest, payload);
      const sale = await findSale(svc.sql, { orgId: req.org_id, livemode: req.livemode }, req.sale_reference);
      if (sale === undefined) throw new DomainError("original_sale_not_found", `Sale ${req.sale_reference} not found`);
      const summary: schemas.SaleSummary = {
        sale_reference: sale.sale_reference,
        gross: sale.gross,
        refunded_amount: sale.refunded_amount,
        remaining_amount: sale.gross - sale.refunded_amount,
        reversed: sale.reversed,
      };
      return { ok: true, status: 200, body: { sale: summary } };
    } catch (e) {
      if (e instanceof DomainError) return domainErrorReply(e);
      throw e;
    }
  });
}
