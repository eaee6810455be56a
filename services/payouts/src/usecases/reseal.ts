/**
 * Key rotation of sealed bank details: values sealed with a key that is still in the ring but no longer active
 * (bank accounts, live payouts' destinations, ACH files) are opened and sealed again with the active key, with
 * the same binding, a batch per transaction. Once none remain the old key can leave the ring. Values whose key
 * is not in the ring are not selected (they cannot be opened until it returns).
 */
import { achFileAad, bankAccountAad, payoutDestinationAad, type PayoutsDeps } from "./deps.ts";
import type { BankDetailsSealer } from "./ports.ts";

/** An ACH file holds up to thousands of entries: a few per transaction keep the pass's memory small. */
const ACH_FILES_PER_BATCH_MAX = 5;

type ResealDeps = Pick<PayoutsDeps, "sealedValues"> & { sealer: BankDetailsSealer };

/** Re-seals up to `batchMax` values of each kind; answers how many moved to the active key. */
export async function resealBatch(deps: ResealDeps, keyIds: readonly string[], batchMax: number): Promise<number> {
  const { sealer } = deps;
  const retired = keyIds.filter((k) => k !== sealer.activeKeyId);
  if (retired.length === 0) return 0;
  return deps.sealedValues.batch(async (tx) => {
    const accounts = await tx.bankAccounts(retired, batchMax);
    for (const a of accounts) {
      const aad = bankAccountAad({ orgId: a.org_id, livemode: a.livemode }, a.participant_id);
      await tx.updateBankAccount(a.id, sealer.seal(sealer.open(a.sealed, aad), aad), sealer.activeKeyId);
    }
    const destinations = await tx.destinations(retired, batchMax);
    for (const p of destinations) {
      const aad = payoutDestinationAad(p.id);
      await tx.updateDestination(p.id, sealer.seal(sealer.open(p.dest_sealed, aad), aad));
    }
    const files = await tx.achFiles(retired, Math.min(batchMax, ACH_FILES_PER_BATCH_MAX));
    for (const f of files) {
      const aad = achFileAad(f.name);
      await tx.updateAchFile(f.id, sealer.seal(sealer.open(f.sealed_content, aad), aad), sealer.activeKeyId);
    }
    return accounts.length + destinations.length + files.length;
  });
}

/** Runs batches until one moves nothing; answers how many values moved in all. */
export async function resealAll(deps: ResealDeps, keyIds: readonly string[], batchMax: number): Promise<number> {
  let moved = 0;
  for (;;) {
    const n = await resealBatch(deps, keyIds, batchMax);
    moved += n;
    if (n === 0) return moved;
  }
}
