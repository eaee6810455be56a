/**
 * Internal reads other services make over NATS (never routed by the gateway): `svc.ledger.internal.*`.
 * The payload names the org and environment itself, as `svc.ledger.post` does.
 */
import { DomainError, parseOrThrow, schemas } from "@treasury/contracts";
import type { Service } from "@treasury/service-kit";
import { domainErrorReply } from "@treasury/service-kit";
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
}
