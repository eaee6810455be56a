import type { Tx } from "./db.ts";

/**
 * Records that `consumer` processed `eventId`, in the transaction doing the work. True the first time; false
 * for a redelivery, whose work must then be skipped. The broker's de-duplication window is finite, this is not.
 */
export async function claimInbox(tx: Tx, schema: string, consumer: string, eventId: string): Promise<boolean> {
  const rows = await tx`
    insert into ${tx(`${schema}.inbox`)} (consumer, event_id) values (${consumer}, ${eventId})
    on conflict do nothing returning event_id`;
  return rows.length === 1;
}
