/** SQL of bank accounts: one per participant, org and environment; PUT replaces it in place. */
import type { Tenant } from "@treasury/contracts";
import { withTx, writeOutbox } from "@treasury/service-kit";
import type { BankAccountRow, BankAccountValues } from "../domain/records.ts";
import type { BankAccountStore } from "../usecases/ports.ts";
import type { Q, Sql } from "./db.ts";

async function findBankAccount(q: Q, s: Tenant, participantId: string): Promise<BankAccountRow | undefined> {
  const [r] = await q<BankAccountRow[]>`
    select * from payouts.bank_accounts where org_id = ${s.orgId} and livemode = ${s.livemode} and participant_id = ${participantId}`;
  return r;
}

/**
 * Inserts or replaces the participant's account. The row keeps its id (the sealed value is bound to it), so
 * `id` is the id a new row would take. Answers the row and whether it was created.
 */
async function upsertBankAccount(q: Q, s: Tenant, participantId: string, id: string, v: BankAccountValues): Promise<{ row: BankAccountRow; created: boolean }> {
  const [r] = await q<(BankAccountRow & { created: boolean })[]>`
    insert into payouts.bank_accounts (id, org_id, livemode, participant_id, routing_number, account_type, last4, sealed, sealed_key_id)
    values (${id}, ${s.orgId}, ${s.livemode}, ${participantId}, ${v.routing_number}, ${v.account_type}, ${v.last4}, ${v.sealed}, ${v.sealed_key_id})
    on conflict (org_id, livemode, participant_id) do update
      set routing_number = excluded.routing_number, account_type = excluded.account_type, last4 = excluded.last4,
          sealed = excluded.sealed, sealed_key_id = excluded.sealed_key_id, updated_at = now()
    returning *, (xmax = 0) as created`;
  if (r === undefined) throw new Error("bank account upsert returned no row");
  const { created, ...row } = r;
  return { row, created };
}

export function pgBankAccountStore(sql: Sql): BankAccountStore {
  return {
    find: (tenant, participantId) => findBankAccount(sql, tenant, participantId),
    save: (tenant, participantId, id, values, eventOf) =>
      withTx(sql, async (tx) => {
        const saved = await upsertBankAccount(tx, tenant, participantId, id, values);
        await writeOutbox(tx, "payouts", eventOf(saved.row));
        return saved;
      }),
  };
}
