// Proves the reseal pass of the payouts service: after a key rotation (k1 → k1,k2 with k2 active) the periodic
// pass moves every sealed value (bank accounts, live payouts' destinations, ACH files) to k2 with its binding
// kept, a second pass finds nothing, and a service with k2 alone opens them all: k1 can leave the ring.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newId } from "@treasury/contracts";
import { generateKeyRingEntry, parseKeyRing, Sealer } from "@treasury/service-kit";
import { allowRisk, setupTestEnv, waitFor, type TestEnv } from "@treasury/testing";
import { buildPayouts, type PayoutsService } from "./service.ts";
import { bankDetailsOf } from "./usecases/bank-account.ts";
import { achFileAad, bankAccountAad, payoutDestinationAad, type SealedBankDetails } from "./usecases/deps.ts";

const k1 = generateKeyRingEntry("k1");
const k2 = generateKeyRingEntry("k2");
const SCOPE = { orgId: "org_reseal", livemode: true };
const DETAILS: SealedBankDetails = { account_holder_name: "Ada Lovelace", account_number: "000123456789" };
const FILE_TEXT = "101 091000019198765432126112712000A094101ODFI BANK              PLATFORM               ";

let env: TestEnv;
let svc: PayoutsService | undefined;

async function start(keys: string, active: string, extra: Record<string, string> = {}): Promise<PayoutsService> {
  await svc?.stop();
  svc = await buildPayouts(env.env("payouts", { PAYOUTS_RECONCILE_INTERVAL_MS: "600000", PAYOUTS_ACH_CUT_INTERVAL_MS: "0", ...extra }), {
    keyRing: parseKeyRing(keys, active),
    risk: allowRisk,
  });
  await svc.start();
  return svc;
}

/** The key ids every sealed value of the schema names, by table. */
async function keyIds(): Promise<Record<string, string[]>> {
  const ids = async (q: Promise<{ k: string }[]>) => (await q).map((r) => r.k);
  return {
    bank_accounts: await ids(env.adminSql`select distinct sealed_key_id as k from payouts.bank_accounts order by 1`),
    bank_accounts_values: await ids(env.adminSql`select distinct split_part(sealed, '.', 2) as k from payouts.bank_accounts order by 1`),
    payouts: await ids(env.adminSql`select distinct split_part(dest_sealed, '.', 2) as k from payouts.payouts where dest_sealed is not null order by 1`),
    ach_files: await ids(env.adminSql`select distinct sealed_key_id as k from payouts.ach_files order by 1`),
    ach_files_values: await ids(env.adminSql`select distinct split_part(sealed_content, '.', 2) as k from payouts.ach_files order by 1`),
  };
}

const all = (k: string) => ({ bank_accounts: [k], bank_accounts_values: [k], payouts: [k], ach_files: [k], ach_files_values: [k] });

let payoutId: string;
const fileName = "reseal-test.ach";

beforeAll(async () => {
  env = await setupTestEnv();
  const old = new Sealer(parseKeyRing(k1));
  // What a service with k1 alone wrote: a bank account, a live payout's destination, an ACH file.
  await env.adminSql`
    insert into payouts.bank_accounts (id, org_id, livemode, participant_id, routing_number, account_type, last4, sealed, sealed_key_id)
    values ('ba_reseal', ${SCOPE.orgId}, true, 'creator_reseal', '011000015', 'checking', '6789',
      ${old.sealJson(DETAILS, bankAccountAad(SCOPE, "creator_reseal"))}, 'k1')`;
  payoutId = newId("po");
  await env.adminSql`
    insert into payouts.payouts (id, org_id, livemode, participant_id, reference_id, request_hash, amount, fees, fees_paid_by, net_amount, rail, status,
      ledger_reference, transaction_id, wallet_id, dest_routing_number, dest_account_type, dest_last4, dest_sealed)
    values (${payoutId}, ${SCOPE.orgId}, true, 'creator_reseal', ${payoutId}, 'h', 500, 0, 'platform', 500, 'bank_ach', 'pending', ${`payout:${payoutId}`},
      ${`txn_${payoutId}`}, '00000000-0000-4000-8000-000000000001', '011000015', 'checking', '6789',
      ${old.sealJson(DETAILS, payoutDestinationAad(payoutId))})`;
  await env.adminSql`
    insert into payouts.ach_files (name, creation_date, file_id_modifier, effective_date, entry_count, total_credit_cents, entry_hash, sealed_content, sealed_key_id, delivered_at)
    values (${fileName}, '2026-11-27', 'A', '2026-11-30', 1, 500, '0001100001', ${old.seal(FILE_TEXT, achFileAad(fileName))}, 'k1', now())`;
});
afterAll(async () => {
  await svc?.stop();
  await env?.cleanup();
});

describe("reseal after a key rotation", () => {
  it("the periodic pass moves every sealed value to the active key, and the retired key can leave the ring", async () => {
    // Proves rows under a retired key are resealed under the current one, and nothing needs the retired key after.
    expect(await keyIds()).toEqual(all("k1"));
    const both = await start(`${k1},${k2}`, "k2", { PAYOUTS_RESEAL_INTERVAL_MS: "100" });
    await waitFor(async () => JSON.stringify(await keyIds()) === JSON.stringify(all("k2")), { timeoutMs: 10_000 });
    expect(await both.reseal()).toBe(0);

    const only = await start(k2, "k2");
    expect(await bankDetailsOf(only.deps, SCOPE, "creator_reseal")).toMatchObject({ details: DETAILS });
    const sealer = new Sealer(parseKeyRing(k2));
    const [p] = await env.adminSql<{ dest_sealed: string }[]>`select dest_sealed from payouts.payouts where id = ${payoutId}`;
    expect(sealer.openJson(p?.dest_sealed ?? "", payoutDestinationAad(payoutId))).toEqual(DETAILS);
    const [f] = await env.adminSql<{ sealed_content: string }[]>`select sealed_content from payouts.ach_files where name = ${fileName}`;
    expect(sealer.open(f?.sealed_content ?? "", achFileAad(fileName))).toBe(FILE_TEXT);
  });
});
