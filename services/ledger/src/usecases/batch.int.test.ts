// Proves group commit on `svc.ledger.post`: concurrent postings share database transactions, yet each gets
// its own answer (a bad one fails alone), duplicates and conflicts are exact, replies come after COMMIT, and
// every file-level invariant holds.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkInvariants } from "../invariants.ts";
import { errorCode, newOrg, ok, startLedger, type LedgerHarness } from "../test-support.ts";
import { createWallet } from "./wallets.ts";

let h: LedgerHarness;

beforeAll(async () => {
  h = await startLedger();
});
afterAll(async () => {
  await h?.close();
});

async function wallets(org: string, n: number, funded: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const res = await createWallet(h.sql, { orgId: org, livemode: false }, { owner_id: `o${i}`, transferable: true });
    const id = String((res.wallet as Record<string, unknown>)["id"]);
    ids.push(id);
    if (funded > 0) ok(await h.postRpc({ org_id: org, livemode: false, kind: "fund", reference_id: `fund-${i}`, postings: [{ debit: { system: "sandbox_funding" }, credit: { wallet_id: id }, amount: funded }] }));
  }
  return ids;
}

describe("group commit", () => {
  it("a burst of mixed postings: good ones commit, bad ones fail alone, duplicates answer the first result", async () => {
    // Proves per-posting isolation inside shared batches and exactly-once under concurrent duplicates.
    const org = newOrg();
    const [a, b, c] = await wallets(org, 3, 1000);
    const base = { org_id: org, livemode: false, kind: "transfer" };
    const good = Array.from({ length: 40 }, (_, i) => ({ ...base, reference_id: `g${i}`, postings: [{ debit: { wallet_id: i % 2 === 0 ? a : b }, credit: { wallet_id: c }, amount: 10 }] }));
    const tooMuch = { ...base, reference_id: "big", postings: [{ debit: { wallet_id: a }, credit: { wallet_id: b }, amount: 10_000 }] };
    const unknown = { ...base, reference_id: "ghost", postings: [{ debit: { wallet_id: "00000000-0000-4000-8000-000000000000" }, credit: { wallet_id: b }, amount: 1 }] };
    const foreign = { ...base, org_id: newOrg(), reference_id: "foreign", postings: [{ debit: { wallet_id: a }, credit: { wallet_id: b }, amount: 1 }] };
    const dupes = Array.from({ length: 5 }, () => ({ ...base, reference_id: "dup", postings: [{ debit: { wallet_id: b }, credit: { wallet_id: a }, amount: 7 }] }));
    const conflict = { ...base, reference_id: "dup", postings: [{ debit: { wallet_id: b }, credit: { wallet_id: a }, amount: 8 }] };
    const all = [...good, tooMuch, unknown, foreign, ...dupes, conflict];
    const replies = await Promise.all(all.map((r) => h.postRpc(r)));

    expect(replies.slice(0, 40).every((r) => r.ok)).toBe(true);
    expect(errorCode(replies[40] ?? { ok: true, status: 200, body: {} })).toBe("insufficient_balance");
    expect(errorCode(replies[41] ?? { ok: true, status: 200, body: {} })).toBe("wallet_not_found");
    expect(errorCode(replies[42] ?? { ok: true, status: 200, body: {} })).toBe("wallet_not_found");
    const dupReplies = replies.slice(43, 48);
    const dupTxn = new Set(dupReplies.map((r) => (r.ok ? r.body["transaction_id"] : r.error.code)));
    expect(dupTxn.size).toBe(1);
    expect(dupReplies.filter((r) => r.ok && r.body["duplicate"] === false)).toHaveLength(1);
    expect(errorCode(replies[48] ?? { ok: true, status: 200, body: {} })).toBe("idempotency_conflict");

    const [rows] = await h.env.adminSql`
      select count(*)::int as n, count(distinct reference_id)::int as refs from ledger.transactions where org_id = ${org} and kind = 'transfer'`;
    expect(rows).toEqual({ n: 41, refs: 41 });
    const bal = await h.env.adminSql`select id, balance::int as balance from ledger.accounts where org_id = ${org} and is_wallet order by owner_id`;
    expect(bal.map((r) => r["balance"])).toEqual([1000 - 200 + 7, 1000 - 200 - 7, 1000 + 400]);
    const report = await checkInvariants(h.env.adminSql, { orgId: org });
    expect(report.violations).toEqual([]);
  });

  it("replies only after COMMIT: every answered transaction is already visible to another connection", async () => {
    // Proves no reply before COMMIT (a reply's transaction_id is readable at once from a separate pool).
    const org = newOrg();
    const [a, b] = await wallets(org, 2, 100_000);
    const seen = await Promise.all(
      Array.from({ length: 60 }, async (_, i) => {
        const reply = ok(await h.postRpc({ org_id: org, livemode: false, kind: "transfer", reference_id: `v${i}`, postings: [{ debit: { wallet_id: i % 2 ? a : b }, credit: { wallet_id: i % 2 ? b : a }, amount: 1 + i }] }));
        const [row] = await h.env.adminSql`select result from ledger.transactions where id = ${String(reply.body["transaction_id"])}`;
        return row !== undefined && (row["result"] as Record<string, unknown>)["transaction_id"] === reply.body["transaction_id"];
      }),
    );
    expect(seen.every(Boolean)).toBe(true);
    const report = await checkInvariants(h.env.adminSql);
    expect(report.violations).toEqual([]);
    expect(report.ok).toBe(true);
  });
});
