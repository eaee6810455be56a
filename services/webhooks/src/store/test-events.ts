/** SQL of sandbox test events sent under an idempotency key (usecases/sandbox-test.ts). */
import type { Tenant } from "@treasury/contracts";
import type { Tx } from "@treasury/service-kit";
import type { TestEventRecord } from "../usecases/ports.ts";

export async function findTestEvent(tx: Tx, s: Tenant, key: string): Promise<TestEventRecord | undefined> {
  const [prior] = await tx<TestEventRecord[]>`
    select event_id, event_type, deliveries_queued from webhooks.test_events
    where org_id = ${s.orgId} and livemode = ${s.livemode} and idempotency_key = ${key}`;
  return prior;
}

/** A concurrent duplicate loses on the primary key and its transaction (and outbox row) rolls back. */
export async function recordTestEvent(tx: Tx, s: Tenant, key: string, e: TestEventRecord): Promise<void> {
  await tx`
    insert into webhooks.test_events (org_id, livemode, idempotency_key, event_id, event_type, deliveries_queued)
    values (${s.orgId}, ${s.livemode}, ${key}, ${e.event_id}, ${e.event_type}, ${e.deliveries_queued})`;
}
