// Proves group commit on `svc.ledger.post`: concurrent postings share database transactions, yet each gets
// its own answer (a bad one fails alone), duplicates and conflicts are exact, replies come after COMMIT, and
// every file-level invariant holds.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkInvariants } from "../invariants.ts";
import { errorCode, newOrg, ok, startLedger, type LedgerHarness } from "../test-support.ts";
import { post } from "./post.ts";
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

  it("a replay of a key committed by an earlier batch answers its result, a changed request conflicts, neighbours commit", async () => {
    // Proves the optimistic claim (the unique index, no read first): a taken key re-runs the batch with the
    // claims read, and only the replay and the conflict are answered from them.
    const org = newOrg();
    const [a, b] = await wallets(org, 2, 10_000);
    const base = { org_id: org, livemode: false, kind: "transfer" };
    const first = { ...base, reference_id: "once", postings: [{ debit: { wallet_id: a }, credit: { wallet_id: b }, amount: 5 }] };
    const original = ok(await h.postRpc(first));
    const fresh = Array.from({ length: 20 }, (_, i) => ({ ...base, reference_id: `f${i}`, postings: [{ debit: { wallet_id: i % 2 ? a : b }, credit: { wallet_id: i % 2 ? b : a }, amount: 1 }] }));
    const changed = { ...first, postings: [{ debit: { wallet_id: a }, credit: { wallet_id: b }, amount: 6 }] };
    const replies = await Promise.all([...fresh, first, changed].map((r) => h.postRpc(r)));
    expect(replies.slice(0, 20).every((r) => r.ok && r.body["duplicate"] === false)).toBe(true);
    const replay = ok(replies[20] ?? { ok: false, error: { code: "internal_error", message: "" } });
    expect(replay.body["duplicate"]).toBe(true);
    expect(replay.body["transaction_id"]).toBe(original.body["transaction_id"]);
    expect(errorCode(replies[21] ?? { ok: true, status: 200, body: {} })).toBe("idempotency_conflict");
    const [rows] = await h.env.adminSql`select count(*)::int as n from ledger.transactions where org_id = ${org} and kind = 'transfer'`;
    expect(rows).toEqual({ n: 21 });
    const report = await checkInvariants(h.env.adminSql, { orgId: org });
    expect(report.violations).toEqual([]);
  });

  it("writes one ledger.transaction.posted event per batch and org, listing every transaction it committed", async () => {
    // Proves the batched event loses no transaction and names none twice.
    const org = newOrg();
    const [a, b] = await wallets(org, 2, 10_000);
    const replies = await Promise.all(
      Array.from({ length: 30 }, (_, i) => h.postRpc({ org_id: org, livemode: false, kind: "transfer", reference_id: `e${i}`, postings: [{ debit: { wallet_id: i % 2 ? a : b }, credit: { wallet_id: i % 2 ? b : a }, amount: 1 }] })),
    );
    const ids = replies.map((r) => String(ok(r).body["transaction_id"]));
    const events = await h.env.adminSql<{ payload: { data: { transactions: { transaction_id: string; entries: unknown[] }[] } } }[]>`
      select payload from ledger.outbox where org_id = ${org} and type = 'ledger.transaction.posted' order by seq`;
    const listed = events.flatMap((e) => e.payload.data.transactions);
    expect(events.length).toBeLessThan(listed.length);
    expect(listed.every((t) => t.entries.length === 2)).toBe(true);
    const transfers = listed.map((t) => t.transaction_id).filter((id) => ids.includes(id));
    expect(new Set(transfers).size).toBe(30);
    expect(transfers).toHaveLength(30);
  });

  it("wallet rows the batcher remembers are never trusted once another path changed them", async () => {
    // Proves the unlocked (remembered-row) batches stay exact: a balance or status changed by post() between
    // two batches is seen, never overwritten, and balance_after matches the real balance.
    const org = newOrg();
    const [a = "", b = ""] = await wallets(org, 2, 100);
    const base = { org_id: org, livemode: false, kind: "transfer" };
    ok(await h.postRpc({ ...base, reference_id: "warm", postings: [{ debit: { wallet_id: a }, credit: { wallet_id: b }, amount: 1 }] }));
    // Another path takes 90 from a (the batcher still remembers 99).
    await post(h.sql, { ...base, kind: "withdrawal", reference_id: "w1", postings: [{ debit: { wallet_id: a }, credit: { system: "payouts_in_transit" }, amount: 90 }] });
    expect(errorCode(await h.postRpc({ ...base, reference_id: "too-much", postings: [{ debit: { wallet_id: a }, credit: { wallet_id: b }, amount: 50 }] }))).toBe("insufficient_balance");
    const fits = ok(await h.postRpc({ ...base, reference_id: "fits", postings: [{ debit: { wallet_id: a }, credit: { wallet_id: b }, amount: 9 }] }));
    expect((fits.body["wallets"] as Record<string, { balance: number }>)[a]?.balance).toBe(0);
    // A wallet frozen behind the batcher's back refuses the next posting.
    await h.env.adminSql`update ledger.accounts set status = 'frozen' where id = ${b}`;
    expect(errorCode(await h.postRpc({ ...base, reference_id: "frozen", postings: [{ debit: { wallet_id: b }, credit: { wallet_id: a }, amount: 1 }] }))).toBe("wallet_not_active");
    await h.env.adminSql`update ledger.accounts set status = 'active' where id = ${b}`;
    const report = await checkInvariants(h.env.adminSql, { orgId: org });
    expect(report.violations).toEqual([]);
  });

  it("batches and direct posts racing on the same wallets: exact balances, never negative", async () => {
    // Proves the guarded write against concurrent writers: every success is applied once, no wallet goes below 0.
    const org = newOrg();
    const ws = await wallets(org, 4, 50);
    const base = { org_id: org, livemode: false };
    const moves = Array.from({ length: 120 }, (_, i) => {
      const from = ws[i % 4] ?? "";
      const to = ws[(i + 1) % 4] ?? "";
      const req = { ...base, kind: i % 3 === 0 ? "direct" : "transfer", reference_id: `m${i}`, postings: [{ debit: { wallet_id: from }, credit: { wallet_id: to }, amount: 7 }] };
      return i % 3 === 0
        ? post(h.sql, req).then(() => true, (e: { code?: string }) => (e.code === "insufficient_balance" ? false : Promise.reject(e)))
        : h.postRpc(req).then((r) => (r.ok ? true : r.error.code === "insufficient_balance" ? false : Promise.reject(new Error(r.error.code))));
    });
    await Promise.all(moves);
    const rows = await h.env.adminSql<{ balance: string }[]>`select balance::text from ledger.accounts where org_id = ${org} and is_wallet`;
    expect(rows.reduce((sum, r) => sum + Number(r.balance), 0)).toBe(200);
    expect(rows.every((r) => Number(r.balance) >= 0)).toBe(true);
    const report = await checkInvariants(h.env.adminSql, { orgId: org });
    expect(report.violations).toEqual([]);
  });
});

