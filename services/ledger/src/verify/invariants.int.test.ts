// Proves checkInvariants can fail: each kind of corruption, made by hand as superuser, is reported by name.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkInvariants, type InvariantReport } from "./invariants.ts";
import { authFor, newOrg, ok, startLedger, type LedgerHarness } from "../test-support.ts";
import type postgres from "postgres";

let h: LedgerHarness;
let org: string;
let wallet: string;

beforeAll(async () => {
  h = await startLedger();
  org = newOrg();
  const auth = authFor(org);
  wallet = String((ok(await h.call("createWallet", auth, { body: { owner_id: "inv", redeemable: true } })).body["wallet"] as Record<string, unknown>)["id"]);
  ok(await h.call("depositToWallet", auth, { params: { wallet_id: wallet }, body: { amount: 1000, reference_id: "inv-1" } }));
  ok(await h.call("createHold", auth, { body: { wallet_id: wallet, amount: 100, reference_id: "inv-h" } }));
});
afterAll(async () => {
  await h?.close();
});

class Rollback extends Error {}

/** Runs a corruption and the checker in one transaction that is then rolled back. */
async function corrupted(corrupt: (tx: postgres.TransactionSql) => Promise<unknown>): Promise<InvariantReport> {
  let report: InvariantReport | undefined;
  await h.env.adminSql
    .begin(async (tx) => {
      await corrupt(tx);
      report = await checkInvariants(tx, { orgId: org });
      throw new Rollback();
    })
    .catch((e: unknown) => {
      if (!(e instanceof Rollback)) throw e;
    });
  if (report === undefined) throw new Error("checker did not run");
  return report;
}

const names = (r: InvariantReport): string[] => [...new Set(r.violations.map((v) => v.invariant))].sort();

describe("checkInvariants", () => {
  it("is ok on a ledger written only through the engine", async () => {
    // Proves the baseline: the fixture's own postings satisfy every invariant.
    expect(await checkInvariants(h.env.adminSql, { orgId: org })).toEqual({ ok: true, violations: [] });
  });

  it("reports a wallet balance that disagrees with its entries", async () => {
    // Proves stored wallet balances are checked against entries and the last balance_after.
    const r = await corrupted((tx) => tx`update ledger.accounts set balance = balance + 1 where id = ${wallet}`);
    expect(r.ok).toBe(false);
    expect(names(r)).toEqual(["wallet_balance_equals_entries", "wallet_last_balance_after"]);
  });

  it("reports an unbalanced transaction and org", async () => {
    // Proves per-transaction and per-org+env balance checks.
    const r = await corrupted(async (tx) => {
      const [e] = await tx<
        { transaction_id: string; account_id: string }[]
      >`select transaction_id, account_id from ledger.entries where account_id = ${wallet} limit 1`;
      await tx`alter table ledger.entries disable trigger user`;
      await tx`insert into ledger.entries (id, org_id, livemode, transaction_id, account_id, entry_type, amount, balance_after)
        values ('ent_bad', ${org}, false, ${e?.transaction_id ?? ""}, ${e?.account_id ?? ""}, 'credit', 5, 1005)`;
      await tx`update ledger.accounts set balance = 1005 where id = ${wallet}`;
    });
    expect(names(r)).toEqual(["postings_sum_to_zero_per_org_env", "transaction_balances"]);
  });

  it("reports shards that disagree with entries, held amounts that disagree with holds, and negative wallets", async () => {
    // Proves the shard, hold and non-negativity checks.
    const shards = await corrupted(
      (tx) => tx`
      update ledger.account_balance_shards set balance = balance + 7
      where shard = 3 and account_id in (select id from ledger.accounts where org_id = ${org} and not is_wallet)`,
    );
    expect(names(shards)).toEqual(["system_shards_equal_entries"]);
    const heldRep = await corrupted((tx) => tx`update ledger.accounts set held_amount = 50 where id = ${wallet}`);
    expect(names(heldRep)).toEqual(["held_equals_active_holds"]);
    const negative = await corrupted(async (tx) => {
      await tx`alter table ledger.accounts drop constraint accounts_wallet_never_negative`;
      await tx`update ledger.accounts set held_amount = 2000 where id = ${wallet}`;
      await tx`update ledger.holds set amount = 2000 where wallet_id = ${wallet}`;
    });
    expect(names(negative)).toEqual(["wallet_not_negative"]);
    expect(await checkInvariants(h.env.adminSql, { orgId: org })).toEqual({ ok: true, violations: [] });
  });
});
