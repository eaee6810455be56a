// Proves "only the ledger writes entries" is enforced by PostgreSQL: another service's role has no access to
// the ledger schema, and even the ledger's own role cannot rewrite or delete entries (append-only).
import postgres from "postgres";
import { serviceDatabaseUrl } from "@treasury/service-kit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkInvariants } from "../verify/invariants.ts";
import { authFor, newOrg, ok, startLedger, type LedgerHarness } from "../test-support.ts";

let h: LedgerHarness;
let payments: postgres.Sql;

beforeAll(async () => {
  h = await startLedger();
  payments = postgres(serviceDatabaseUrl(h.env.adminUrl, "payments"), { max: 1, onnotice: () => {} });
});
afterAll(async () => {
  await payments?.end({ timeout: 5 });
  await h?.close();
});

async function pgError(p: Promise<unknown>): Promise<{ code?: string; message: string }> {
  try {
    await p;
  } catch (e) {
    return e as { code?: string; message: string };
  }
  throw new Error("expected the statement to be refused");
}

describe("database permissions", () => {
  it("payments_svc cannot read, insert into or update ledger.entries", async () => {
    // Proves the boundary is the database's: a compromised or buggy payments service cannot move ledger money.
    const auth = authFor(newOrg());
    const w = ok(await h.call("createWallet", auth, { body: { owner_id: "perm" } })).body["wallet"] as Record<string, unknown>;
    ok(await h.call("depositToWallet", auth, { params: { wallet_id: String(w["id"]) }, body: { amount: 100, reference_id: "perm-1" } }));
    const [entry] = await h.env.adminSql<{ transaction_id: string; account_id: string }[]>`select transaction_id, account_id from ledger.entries limit 1`;
    const insert = await pgError(payments`
      insert into ledger.entries (id, org_id, livemode, transaction_id, account_id, entry_type, amount)
      values ('ent_forged', ${auth.org_id}, false, ${entry?.transaction_id ?? ""}, ${entry?.account_id ?? ""}, 'credit', 1000000)`);
    expect(insert.code).toBe("42501");
    expect(insert.message).toMatch(/permission denied/);
    const update = await pgError(payments`update ledger.entries set amount = 1`);
    expect(update.code).toBe("42501");
    expect(update.message).toMatch(/permission denied/);
    const read = await pgError(payments`select * from ledger.accounts`);
    expect(read.code).toBe("42501");
    const balance = await pgError(payments`update ledger.accounts set balance = balance + 100`);
    expect(balance.code).toBe("42501");
    const report = await checkInvariants(h.env.adminSql);
    expect(report.violations).toEqual([]);
  });

  it("the ledger's own role cannot update or delete entries", async () => {
    // Proves entries are append-only for their writer too: corrections are reversing transactions.
    const update = await pgError(h.sql`update ledger.entries set amount = amount + 1`);
    expect(update.code).toBe("42501");
    expect(update.message).toMatch(/append-only/);
    const del = await pgError(h.sql`delete from ledger.entries`);
    expect(del.message).toMatch(/append-only/);
    const report = await checkInvariants(h.env.adminSql);
    expect(report.ok).toBe(true);
  });

  it("entries must name an existing transaction and account; transactions and accounts are never deleted", async () => {
    // Proves the statement-level reference check (migration 0003) keeps what the foreign keys guaranteed.
    const auth = authFor(newOrg());
    const w = ok(await h.call("createWallet", auth, { body: { owner_id: "refs" } })).body["wallet"] as Record<string, unknown>;
    ok(await h.call("depositToWallet", auth, { params: { wallet_id: String(w["id"]) }, body: { amount: 100, reference_id: "refs-1" } }));
    const [entry] = await h.env.adminSql<{ transaction_id: string; account_id: string }[]>`
      select transaction_id, account_id from ledger.entries where org_id = ${auth.org_id} limit 1`;
    const noTxn = await pgError(h.sql`
      insert into ledger.entries (id, org_id, livemode, transaction_id, account_id, entry_type, amount)
      values ('ent_no_txn', ${auth.org_id}, false, 'txn_missing', ${entry?.account_id ?? ""}, 'credit', 1)`);
    expect(noTxn.code).toBe("23503");
    const noAccount = await pgError(h.sql`
      insert into ledger.entries (id, org_id, livemode, transaction_id, account_id, entry_type, amount)
      values ('ent_no_acct', ${auth.org_id}, false, ${entry?.transaction_id ?? ""}, '00000000-0000-4000-8000-000000000000', 'credit', 1)`);
    expect(noAccount.code).toBe("23503");
    for (const stmt of [
      h.sql`delete from ledger.transactions where id = ${entry?.transaction_id ?? ""}`,
      h.sql`delete from ledger.accounts where id = ${String(w["id"])}`,
      h.sql`update ledger.transactions set id = 'txn_renamed' where id = ${entry?.transaction_id ?? ""}`,
      h.sql`update ledger.accounts set id = '00000000-0000-4000-8000-000000000001' where id = ${String(w["id"])}`,
    ]) {
      expect((await pgError(stmt)).code).toBe("42501");
    }
    const bad = await pgError(h.sql`select ledger.batch_write_check(false, 'test')`);
    expect(bad.message).toMatch(/other row counts/);
    const report = await checkInvariants(h.env.adminSql);
    expect(report.ok).toBe(true);
  });
});
