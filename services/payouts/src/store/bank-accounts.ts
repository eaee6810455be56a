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
          sealed = excluded.sealed, sealed_key_id = excluded.sealed_key_id, updated_at = now(),
          -- A new account is where the participant says money goes now: a disabled one is active again.
          status = 'active', disabled_reason = null, disabled_at = null, disabled_by_payout_id = null
    returning *, (xmax = 0) as created`;
  if (r === undefined) throw new Error("bank account upsert returned no row");
  const { created, ...row } = r;
  return { row, created };
}

/**
 * A notification of change's correction: the details replaced only while they are as the caller read them (the
 * sealed value is the witness), keeping the row's status. Undefined when they changed since.
 */
async function correctBankAccount(q: Q, s: Tenant, participantId: string, expectedSealed: string, v: BankAccountValues): Promise<BankAccountRow | undefined> {
  const [r] = await q<BankAccountRow[]>`
    update payouts.bank_accounts
       set routing_number = ${v.routing_number}, account_type = ${v.account_type}, last4 = ${v.last4}, sealed = ${v.sealed},
           sealed_key_id = ${v.sealed_key_id}, updated_at = now()
     where org_id = ${s.orgId} and livemode = ${s.livemode} and participant_id = ${participantId} and sealed = ${expectedSealed}
     returning *`;
  return r;
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
    correct: (tenant, participantId, expectedSealed, values, eventOf) =>
      withTx(sql, async (tx) => {
        const row = await correctBankAccount(tx, tenant, participantId, expectedSealed, values);
        if (row !== undefined) await writeOutbox(tx, "payouts", eventOf(row));
        return row;
      }),
  };
}
