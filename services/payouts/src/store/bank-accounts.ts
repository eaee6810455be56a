/** SQL of bank accounts: one per participant, org and environment; PUT replaces it in place. */
import type { Scope } from "../adapters/ledger.ts";
import type { Q } from "./db.ts";

export interface BankAccountRow {
  id: string;
  org_id: string;
  livemode: boolean;
  participant_id: string;
  routing_number: string;
  account_type: "checking" | "savings";
  last4: string;
  sealed: string;
  sealed_key_id: string;
  created_at: Date;
  updated_at: Date;
}

export type BankAccountValues = Pick<BankAccountRow, "routing_number" | "account_type" | "last4" | "sealed" | "sealed_key_id">;

export async function findBankAccount(q: Q, s: Scope, participantId: string): Promise<BankAccountRow | undefined> {
  const [r] = await q<BankAccountRow[]>`
    select * from payouts.bank_accounts where org_id = ${s.orgId} and livemode = ${s.livemode} and participant_id = ${participantId}`;
  return r;
}

/**
 * Inserts or replaces the participant's account. The row keeps its id (the sealed value is bound to it), so
 * `id` is the id a new row would take. Answers the row and whether it was created.
 */
export async function upsertBankAccount(
  q: Q,
  s: Scope,
  participantId: string,
  id: string,
  v: BankAccountValues,
): Promise<{ row: BankAccountRow; created: boolean }> {
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
