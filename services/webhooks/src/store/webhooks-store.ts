/** The webhooks store over PostgreSQL (usecases/ports.ts): endpoints, the management side of deliveries, test events. */
import { withTx, writeOutbox, type Sql, type Tx } from "@treasury/service-kit";
import type { FanOutStore, WebhooksStore, WebhooksTx } from "../usecases/ports.ts";
import { fanOutDeliveries, findDelivery, listDeliveries, makeDueNow, replayFailedSince } from "./deliveries.ts";
import * as endpoints from "./endpoints.ts";
import { findTestEvent, recordTestEvent } from "./test-events.ts";

function txStore(tx: Tx): WebhooksTx {
  return {
    lockEndpointCreates: (tenant) => endpoints.lockEndpointCreates(tx, tenant),
    countEndpoints: (tenant) => endpoints.countEndpoints(tx, tenant),
    insertEndpoint: (tenant, e) => endpoints.insertEndpoint(tx, tenant, e),
    findEndpoint: (tenant, id, opts) => endpoints.findEndpoint(tx, tenant, id, opts),
    rotateSecret: (tenant, id, sealed, overlapMs) => endpoints.rotateSecret(tx, tenant, id, sealed, overlapMs),
    lockUnsealed: (retired, limit) => endpoints.lockUnsealed(tx, retired, limit),
    storeSealed: (id, sealed) => endpoints.storeSealed(tx, id, sealed),
    findDelivery: (tenant, id, opts) => findDelivery(tx, tenant, id, opts),
    makeDueNow: (tenant, id, extra) => makeDueNow(tx, tenant, id, extra),
    replayFailedSince: (tenant, endpointId, since, limitMax) => replayFailedSince(tx, tenant, endpointId, since, limitMax),
    matchingEndpointIds: (tenant, type) => endpoints.matchingEndpointIds(tx, tenant, type),
    findTestEvent: (tenant, key) => findTestEvent(tx, tenant, key),
    recordTestEvent: (tenant, key, e) => recordTestEvent(tx, tenant, key, e),
    emit: async (event) => void (await writeOutbox(tx, "webhooks", event)),
  };
}

export function pgWebhooksStore(sql: Sql): WebhooksStore {
  return {
    transaction: (fn) => withTx(sql, (tx) => fn(txStore(tx))),
    listEndpoints: (tenant, limitMax) => endpoints.listEndpoints(sql, tenant, limitMax),
    findEndpoint: (tenant, id) => endpoints.findEndpoint(sql, tenant, id),
    updateEndpoint: (tenant, id, patch) => endpoints.updateEndpoint(sql, tenant, id, patch),
    softDeleteEndpoint: (tenant, id) => endpoints.softDeleteEndpoint(sql, tenant, id),
    listDeliveries: (tenant, filter) => listDeliveries(sql, tenant, filter),
  };
}

/** The fan-out's delivery rows in the consumer's transaction (committed before the event is acked). */
export function pgFanOutStore(tx: Tx): FanOutStore {
  return { insertDeliveries: (tenant, event, maxAttempts) => fanOutDeliveries(tx, tenant, event, maxAttempts) };
}
