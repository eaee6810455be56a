// Proves group commit on `svc.ledger.post`: concurrent postings share database transactions, yet each gets
// its own answer (a bad one fails alone), duplicates and conflicts are exact, replies come after COMMIT, and
// every file-level invariant holds.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkInvariants } from "../verify/invariants.ts";
import { errorCode, newOrg, ok, startLedger, type LedgerHarness } from "../test-support.ts";
import { createParticipant } from "../usecases/participants.ts";
import { batchable, parsePostRequest } from "./request.ts";
import { Poster } from "./poster.ts";
import { createWallet } from "../usecases/wallets.ts";

let h: LedgerHarness;
/** A second engine, as another replica would be, that runs every request as a batch of one. */
let single: Poster | undefined;
const alone = (): Poster => (single ??= new Poster(h.sql, { groupCommit: false }));

beforeAll(async () => {
  h = await startLedger();
});
afterAll(async () => {
  await h?.close();
});

async function wallets(org: string, n: number, funded: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const res = await createWallet(h.deps, { orgId: org, livemode: false }, { owner_id: `o${i}`, transferable: true });
    const id = String((res.wallet as Record<string, unknown>)["id"]);
    ids.push(id);
    if (funded > 0)
      ok(
        await h.postRpc({
          org_id: org,
          livemode: false,
          kind: "fund",
          reference_id: `fund-${i}`,
          postings: [{ debit: { system: "sandbox_funding" }, credit: { wallet_id: id }, amount: funded }],
        }),
      );
  }
  return ids;
}

describe("group commit", () => {
  it("a burst of mixed postings: good ones commit, bad ones fail alone, duplicates answer the first result", async () => {
    // Proves per-posting isolation inside shared batches and exactly-once under concurrent duplicates.
    const org = newOrg();
    const [a, b, c] = await wallets(org, 3, 1000);
    const base = { org_id: org, livemode: false, kind: "transfer" };
    const good = Array.from({ length: 40 }, (_, i) => ({
      ...base,
      reference_id: `g${i}`,
      postings: [{ debit: { wallet_id: i % 2 === 0 ? a : b }, credit: { wallet_id: c }, amount: 10 }],
    }));
    const tooMuch = { ...base, reference_id: "big", postings: [{ debit: { wallet_id: a }, credit: { wallet_id: b }, amount: 10_000 }] };
    const unknown = {
      ...base,
      reference_id: "ghost",
      postings: [{ debit: { wallet_id: "00000000-0000-4000-8000-000000000000" }, credit: { wallet_id: b }, amount: 1 }],
    };
    const foreign = { ...base, org_id: newOrg(), reference_id: "foreign", postings: [{ debit: { wallet_id: a }, credit: { wallet_id: b }, amount: 1 }] };
    const dupes = Array.from({ length: 5 }, () => ({
      ...base,
      reference_id: "dup",
      postings: [{ debit: { wallet_id: b }, credit: { wallet_id: a }, amount: 7 }],
    }));
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
        const reply = ok(
          await h.postRpc({
            org_id: org,
            livemode: false,
            kind: "transfer",
            reference_id: `v${i}`,
            postings: [{ debit: { wallet_id: i % 2 ? a : b }, credit: { wallet_id: i % 2 ? b : a }, amount: 1 + i }],
          }),
        );
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
    const fresh = Array.from({ length: 20 }, (_, i) => ({
      ...base,
      reference_id: `f${i}`,
      postings: [{ debit: { wallet_id: i % 2 ? a : b }, credit: { wallet_id: i % 2 ? b : a }, amount: 1 }],
    }));
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
      Array.from({ length: 30 }, (_, i) =>
        h.postRpc({
          org_id: org,
          livemode: false,
          kind: "transfer",
          reference_id: `e${i}`,
          postings: [{ debit: { wallet_id: i % 2 ? a : b }, credit: { wallet_id: i % 2 ? b : a }, amount: 1 }],
        }),
      ),
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
    // Proves the unlocked (remembered-row) batches stay exact: a balance or status changed by another engine between
    // two batches is seen, never overwritten, and balance_after matches the real balance.
    const org = newOrg();
    const [a = "", b = ""] = await wallets(org, 2, 100);
    const base = { org_id: org, livemode: false, kind: "transfer" };
    ok(await h.postRpc({ ...base, reference_id: "warm", postings: [{ debit: { wallet_id: a }, credit: { wallet_id: b }, amount: 1 }] }));
    // Another path takes 90 from a (the batcher still remembers 99).
    await alone().post({
      ...base,
      kind: "withdrawal",
      reference_id: "w1",
      postings: [{ debit: { wallet_id: a }, credit: { system: "payouts_in_transit" }, amount: 90 }],
    });
    expect(
      errorCode(await h.postRpc({ ...base, reference_id: "too-much", postings: [{ debit: { wallet_id: a }, credit: { wallet_id: b }, amount: 50 }] })),
    ).toBe("insufficient_balance");
    const fits = ok(await h.postRpc({ ...base, reference_id: "fits", postings: [{ debit: { wallet_id: a }, credit: { wallet_id: b }, amount: 9 }] }));
    expect((fits.body["wallets"] as Record<string, { balance: number }>)[a]?.balance).toBe(0);
    // A wallet frozen behind the batcher's back refuses the next posting.
    await h.env.adminSql`update ledger.accounts set status = 'frozen' where id = ${b}`;
    expect(errorCode(await h.postRpc({ ...base, reference_id: "frozen", postings: [{ debit: { wallet_id: b }, credit: { wallet_id: a }, amount: 1 }] }))).toBe(
      "wallet_not_active",
    );
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
      const req = {
        ...base,
        kind: i % 3 === 0 ? "direct" : "transfer",
        reference_id: `m${i}`,
        postings: [{ debit: { wallet_id: from }, credit: { wallet_id: to }, amount: 7 }],
      };
      return i % 3 === 0
        ? alone()
            .post(req)
            .then(
              () => true,
              (e: { code?: string }) => (e.code === "insufficient_balance" ? false : Promise.reject(e)),
            )
        : h.postRpc(req).then((r) => (r.ok ? true : r.error.code === "insufficient_balance" ? false : Promise.reject(new Error(r.error.code))));
    });
    await Promise.all(moves);
    const rows = await h.env.adminSql<{ balance: string }[]>`select balance::text from ledger.accounts where org_id = ${org} and is_wallet`;
    expect(rows.reduce((sum, r) => sum + Number(r.balance), 0)).toBe(200);
    expect(rows.every((r) => Number(r.balance) >= 0)).toBe(true);
    const report = await checkInvariants(h.env.adminSql, { orgId: org });
    expect(report.violations).toEqual([]);
  });

  it("sales with holds in shared batches: each sale, hold, held amount and event exactly once; conflicts answered alone", async () => {
    // Proves the batch path for checkout sales (postings + holds_create + sale): the same rows and answers as
    // `post`, duplicates move money once, a reused sale or hold reference fails alone with duplicate_reference_id.
    const org = newOrg();
    const scope = { orgId: org, livemode: false };
    const creators = ["c0", "c1", "c2"];
    for (const id of creators) await createParticipant(h.deps, scope, { participant_id: id });
    const sale = (i: number, hold: boolean, extra: Record<string, unknown> = {}) => {
      const creator = { participant_id: creators[i % 3] ?? "c0" };
      const [gross, share, tax] = [1000 + i, 800, 7];
      return {
        org_id: org,
        livemode: false,
        kind: "checkout_sale",
        reference_id: `checkout:s${i}`,
        amount: gross,
        postings: [
          { debit: { system: "platform_cash" }, credit: creator, amount: share },
          { debit: { system: "platform_cash" }, credit: { system: "platform_revenue" }, amount: gross - share - tax },
          { debit: { system: "platform_cash" }, credit: { system: "sales_tax_payable" }, amount: tax },
        ],
        holds_create: hold ? [{ wallet: creator, amount: share, reference_id: `checkout_hold:s${i}`, reason_code: "checkout_hold" }] : [],
        sale: {
          sale_reference: `checkout:s${i}`,
          participant_id: creator.participant_id,
          gross,
          creator_amount: share,
          platform_amount: gross - share - tax,
          sales_tax: tax,
          ...(hold ? { hold_index: 0 } : {}),
        },
        ...extra,
      };
    };
    expect(batchable(parsePostRequest(sale(0, true)), undefined)).toBe(true);
    // A clean burst: the group-commit path itself .
    const timePrefix = `hold_${Date.now().toString(36).padStart(9, "0").slice(0, 5)}`;
    const clean = await Promise.all(Array.from({ length: 30 }, (_, i) => h.postRpc(sale(i, i % 2 === 0))));
    const cleanHolds = clean.flatMap((r) => ok(r).body["holds_created"] as { hold_id: string }[]);
    expect(cleanHolds).toHaveLength(15);
    for (const hold of cleanHolds) expect(hold.hold_id.startsWith(timePrefix)).toBe(true);
    // Then replays and conflicts, mixed in one burst.
    const requests = [
      ...Array.from({ length: 30 }, (_, i) => sale(i, i % 2 === 0)),
      sale(3, false), // s3 once more: the same answer, nothing moves twice
      sale(3, false),
      { ...sale(40, false), reference_id: "checkout:other", sale: { ...sale(40, false).sale, sale_reference: "checkout:s5" } }, // s5's sale reference again
      { ...sale(41, true), holds_create: [{ wallet: { participant_id: "c1" }, amount: 800, reference_id: "checkout_hold:s4", reason_code: "checkout_hold" }] }, // s4's hold reference again
      { ...sale(42, true), holds_create: [{ wallet: { participant_id: "ghost" }, amount: 800, reason_code: "checkout_hold" }] },
    ];
    const replies = await Promise.all(requests.map((r) => h.postRpc(r)));
    for (const [i, r] of replies.slice(0, 30).entries()) expect(ok(r).body["transaction_id"]).toBe(ok(clean[i] ?? r).body["transaction_id"]);
    const firstS3 = ok(replies[3] ?? { ok: true, status: 200, body: {} }).body;
    for (const r of replies.slice(30, 32)) expect(ok(r).body["transaction_id"]).toBe(firstS3["transaction_id"]);
    expect(errorCode(replies[32] ?? { ok: true, status: 200, body: {} })).toBe("duplicate_reference_id");
    expect(errorCode(replies[33] ?? { ok: true, status: 200, body: {} })).toBe("duplicate_reference_id");
    expect(errorCode(replies[34] ?? { ok: true, status: 200, body: {} })).toBe("participant_not_found");

    // Every held sale answers its hold, and the sale row names it.
    for (let i = 0; i < 30; i += 2) {
      const body = ok(replies[i] ?? { ok: true, status: 200, body: {} }).body;
      const created = body["holds_created"] as { hold_id: string; amount: number; reference_id: string; participant_id: string }[];
      expect(created).toHaveLength(1);
      expect(created[0]).toMatchObject({ amount: 800, reference_id: `checkout_hold:s${i}`, participant_id: creators[i % 3] });
      const [row] = await h.env.adminSql`select hold_id from ledger.sales where org_id = ${org} and sale_reference = ${`checkout:s${i}`}`;
      expect(row?.["hold_id"]).toBe(created[0]?.hold_id);
    }
    const [counts] = await h.env.adminSql`
      select (select count(*)::int from ledger.sales where org_id = ${org}) as sales,
             (select count(*)::int from ledger.holds where org_id = ${org} and status = 'held') as holds,
             (select count(*)::int from ledger.outbox where org_id = ${org} and type = 'hold.created') as hold_events,
             (select count(*)::int from ledger.transactions where org_id = ${org} and kind = 'checkout_sale') as txns`;
    expect(counts).toEqual({ sales: 30, holds: 15, hold_events: 15, txns: 30 });
    // Each creator: balance = its 10 shares; held = its held shares (sales 0, 2, 4, … are held).
    const rows = await h.env.adminSql<{ participant_id: string; balance: string; held_amount: string }[]>`
      select participant_id, balance::text, held_amount::text from ledger.accounts where org_id = ${org} and is_wallet order by participant_id`;
    const heldOf = (c: number) => Array.from({ length: 30 }, (_, i) => i).filter((i) => i % 3 === c && i % 2 === 0).length * 800;
    expect(rows.map((r) => [r.participant_id, Number(r.balance), Number(r.held_amount)])).toEqual(creators.map((c, k) => [c, 8000, heldOf(k)]));
    const report = await checkInvariants(h.env.adminSql, { orgId: org });
    expect(report.violations).toEqual([]);
  });

  it("a creator owing the platform repays from batched earnings, once across a batch", async () => {
    // Proves receivable recovery on the group-commit path (receivables read under the wallet lock, in the
    // same round trip): the debt is repaid from the first credits only, and balances stay exact.
    const org = newOrg();
    await createParticipant(h.deps, { orgId: org, livemode: false }, { participant_id: "owes" });
    await alone().post({
      org_id: org,
      livemode: false,
      kind: "adjust",
      reference_id: "debt",
      postings: [{ debit: { system: "creator_receivable", entity_id: "owes" }, credit: { system: "platform_cash" }, amount: 500 }],
    });
    const earn = (i: number) => ({
      org_id: org,
      livemode: false,
      kind: "checkout_sale",
      reference_id: `e${i}`,
      postings: [{ debit: { system: "platform_cash" }, credit: { participant_id: "owes" }, amount: 300 }],
    });
    const replies = await Promise.all([0, 1, 2, 3].map((i) => h.postRpc(earn(i))));
    const recovered = replies.map((r) =>
      Number(ok(r).body["extra"] === undefined ? 0 : ((ok(r).body["extra"] as Record<string, unknown>)["receivable_recovered"] ?? 0)),
    );
    expect(recovered.reduce((a, b) => a + b, 0)).toBe(500);
    const [w] = await h.env.adminSql`select balance::int as balance from ledger.accounts where org_id = ${org} and participant_id = 'owes' and is_wallet`;
    expect(w?.["balance"]).toBe(4 * 300 - 500);
    const [debt] = await h.env.adminSql`
      select coalesce(sum(sh.balance), 0)::int as outstanding from ledger.accounts a join ledger.account_balance_shards sh on sh.account_id = a.id
      where a.org_id = ${org} and a.account_type = 'creator_receivable' and a.entity_id = 'owes'`;
    expect(debt?.["outstanding"]).toBe(0);
    const report = await checkInvariants(h.env.adminSql, { orgId: org });
    expect(report.violations).toEqual([]);
  });

  it("earnings credited onto a hold repay a creator's debt when the hold is released, not before", async () => {
    // Proves "recovered from the creator's next earnings before they become available" with holds: a batched
    // sale holding the share recovers nothing (nothing became available); releasing the hold repays first.
    const org = newOrg();
    await createParticipant(h.deps, { orgId: org, livemode: false }, { participant_id: "held" });
    await alone().post({
      org_id: org,
      livemode: false,
      kind: "adjust",
      reference_id: "debt",
      postings: [{ debit: { system: "creator_receivable", entity_id: "held" }, credit: { system: "platform_cash" }, amount: 500 }],
    });
    const sale = ok(
      await h.postRpc({
        org_id: org,
        livemode: false,
        kind: "checkout_sale",
        reference_id: "s1",
        postings: [{ debit: { system: "platform_cash" }, credit: { participant_id: "held" }, amount: 800 }],
        holds_create: [{ wallet: { participant_id: "held" }, amount: 800, reason_code: "checkout_hold" }],
      }),
    ).body;
    expect((sale["extra"] as Record<string, unknown>)["receivable_recovered"]).toBeUndefined();
    const holdId = (sale["holds_created"] as { hold_id: string }[])[0]?.hold_id ?? "";
    const released = await alone().post({ org_id: org, livemode: false, kind: "hold_release", reference_id: "r1", holds_release: [holdId] });
    expect(released.result.extra["receivable_recovered"]).toBe(500);
    const [w] = await h.env
      .adminSql`select balance::int as balance, held_amount::int as held from ledger.accounts where org_id = ${org} and participant_id = 'held' and is_wallet`;
    expect(w).toEqual({ balance: 300, held: 0 });
    const report = await checkInvariants(h.env.adminSql, { orgId: org });
    expect(report.violations).toEqual([]);
  });
});
