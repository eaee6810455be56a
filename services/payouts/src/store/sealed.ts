/**
 * SQL of the reseal pass: the sealed values of the schema (bank accounts, live payouts' destinations, ACH files)
 * that name one of the given key ids, locked so another replica resealing skips them, and their update. The
 * pass never touches `updated_at`: moving a value to another key changes nothing a reader sees.
 */
import { withTx } from "@treasury/service-kit";
import type { SealedValueStore } from "../usecases/ports.ts";
import type { Sql, Tx } from "./db.ts";

async function lockBankAccountsSealedWith(
  tx: Tx,
  keyIds: readonly string[],
  limit: number,
): Promise<{ id: string; org_id: string; livemode: boolean; participant_id: string; sealed: string }[]> {
  return tx`
    select id, org_id, livemode, participant_id, sealed from payouts.bank_accounts
    where sealed_key_id = any(${keyIds as string[]}::text[])
    order by id limit ${limit}
    for update skip locked`;
}

async function updateBankAccountSealed(tx: Tx, id: string, sealed: string, keyId: string): Promise<void> {
  await tx`update payouts.bank_accounts set sealed = ${sealed}, sealed_key_id = ${keyId} where id = ${id}`;
}

/** The key id is the second dot-separated part of a sealed value (libs/service-kit sealed.ts); migration 0002 indexes it. */
async function lockDestinationsSealedWith(tx: Tx, keyIds: readonly string[], limit: number): Promise<{ id: string; dest_sealed: string }[]> {
  return tx`
    select id, dest_sealed from payouts.payouts
    where dest_sealed is not null and split_part(dest_sealed, '.', 2) = any(${keyIds as string[]}::text[])
    order by id limit ${limit}
    for update skip locked`;
}

async function updateDestinationSealed(tx: Tx, id: string, sealed: string): Promise<void> {
  await tx`update payouts.payouts set dest_sealed = ${sealed} where id = ${id}`;
}

async function lockAchFilesSealedWith(tx: Tx, keyIds: readonly string[], limit: number): Promise<{ id: string; name: string; sealed_content: string }[]> {
  return tx`
    select id::text as id, name, sealed_content from payouts.ach_files
    where sealed_key_id = any(${keyIds as string[]}::text[])
    order by id limit ${limit}
    for update skip locked`;
}

async function updateAchFileSealed(tx: Tx, id: string, sealed: string, keyId: string): Promise<void> {
  await tx`update payouts.ach_files set sealed_content = ${sealed}, sealed_key_id = ${keyId} where id = ${id}::bigint`;
}

/** Each batch is one transaction; the rows it reads are locked until it ends. */
export function pgSealedValueStore(sql: Sql): SealedValueStore {
  return {
    batch: (fn) =>
      withTx(sql, (tx) =>
        fn({
          bankAccounts: (keyIds, limit) => lockBankAccountsSealedWith(tx, keyIds, limit),
          updateBankAccount: (id, sealed, keyId) => updateBankAccountSealed(tx, id, sealed, keyId),
          destinations: (keyIds, limit) => lockDestinationsSealedWith(tx, keyIds, limit),
          updateDestination: (id, sealed) => updateDestinationSealed(tx, id, sealed),
          achFiles: (keyIds, limit) => lockAchFilesSealedWith(tx, keyIds, limit),
          updateAchFile: (id, sealed, keyId) => updateAchFileSealed(tx, id, sealed, keyId),
        }),
      ),
  };
}
