/**
 * The refunds store over PostgreSQL (usecases/ports.ts, RefundsStore). The two writes every refund makes outside
 * a caller's transaction are coalesced: the intents (and settles) of the requests that arrive in one event-loop
 * turn go to PostgreSQL as one statement (service-kit coalesce.ts), each request still waiting for its own row.
 */
import type { Tenant } from "@treasury/contracts";
import { Coalescer, markOutboxWritten, outboxRowValues, wakeOutboxRelay, withTx, writeOutbox, type NewEvent } from "@treasury/service-kit";
import type postgres from "postgres";
import type { NewRefund } from "../domain/records.ts";
import type { RefundSettlement, RefundsStore, RefundsTx } from "../usecases/ports.ts";
import type { Sql, Tx } from "./db.ts";
import { expireDueRequests, findRefundRequest, findRefundRequestByKey, insertRefundRequest, listRefundRequests, moveRefundRequest } from "./refund-requests.ts";
import {
  findRefund,
  findRefundForRequest,
  insertRefund,
  insertRefunds,
  listRefunds,
  markFailed,
  recordProcessorStatus,
  recordReversal,
  settleCompletedMany,
  stuckPending,
} from "./refunds.ts";

function txStore(tx: Tx): RefundsTx {
  return {
    findRefund: (tenant, id) => findRefund(tx, tenant, id),
    insertRefund: (tenant, refund) => insertRefund(tx, tenant, refund),
    markFailed: (id, code, reason, at) => markFailed(tx, id, code, reason, at),
    findRefundRequest: (tenant, id, forUpdate) => findRefundRequest(tx, tenant, id, forUpdate),
    insertRefundRequest: (tenant, request) => insertRefundRequest(tx, tenant, request),
    moveRefundRequest: (id, from, fields, at) => moveRefundRequest(tx, id, from, fields, at),
    expireDueRequests: (now, limit) => expireDueRequests(tx, now, limit),
    emit: async (event) => void (await writeOutbox(tx, "refunds", event)),
    emitMany: (events) => writeOutboxMany(tx, events),
  };
}

/** Many events in one insert, in their order (what writeOutbox stores for each); withTx wakes the relay after COMMIT. */
async function writeOutboxMany(tx: Tx, events: readonly NewEvent[]): Promise<void> {
  if (events.length === 0) return;
  const rows = events.map((e) => outboxRowValues(e));
  await tx`
    insert into refunds.outbox (id, org_id, livemode, type, subject, payload, headers)
    select e.id, e.org_id, e.livemode, e.type, e.subject, e.payload, e.headers
    from rows from (jsonb_to_recordset(${tx.json(rows as unknown as postgres.JSONValue)}::jsonb)
      as (id text, org_id text, livemode boolean, type text, subject text, payload jsonb, headers jsonb)) with ordinality as e
    order by e.ordinality`;
  markOutboxWritten(tx, "refunds");
}

export function pgRefundsStore(sql: Sql): RefundsStore {
  const inserts = new Coalescer((rs: readonly { tenant: Tenant; refund: NewRefund }[]) => insertRefunds(sql, rs));
  const settles = new Coalescer((ss: readonly RefundSettlement[]) => settleCompletedMany(sql, ss));
  return {
    transaction: (fn) => withTx(sql, (tx) => fn(txStore(tx))),
    insertRefund: (tenant, refund) => inserts.submit({ tenant, refund }),
    settleCompleted: async (settlement) => {
      const done = await settles.submit(settlement);
      // The statement wrote the refund's events outside withTx: the local relay is woken here.
      if (done !== undefined) wakeOutboxRelay("refunds");
      return done;
    },
    findRefund: (tenant, id) => findRefund(sql, tenant, id),
    findRefundForRequest: (tenant, key, externalRefundId) => findRefundForRequest(sql, tenant, key, externalRefundId),
    listRefunds: (tenant, filter) => listRefunds(sql, tenant, filter),
    recordProcessorStatus: (id, state) => recordProcessorStatus(sql, id, state),
    recordReversal: (id, transactionId) => recordReversal(sql, id, transactionId),
    stuckPending: (graceMs, limit) => stuckPending(sql, graceMs, limit),
    findRefundRequest: (tenant, id) => findRefundRequest(sql, tenant, id),
    findRefundRequestByKey: (tenant, key) => findRefundRequestByKey(sql, tenant, key),
    listRefundRequests: (tenant, filter) => listRefundRequests(sql, tenant, filter),
  };
}
