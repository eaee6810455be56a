// Proves the posting engine's guarantees on real PostgreSQL + NATS: exactly-once under concurrent duplicates,
// no overdraft under concurrent withdrawals, all-or-nothing holds and postings, and the svc.ledger.post RPC.
import { DomainError, PostRequest } from "@treasury/contracts";
import { waitFor } from "@treasury/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { PostRequestInput } from "@treasury/contracts";
import { BALANCE_SHARDS } from "../domain/accounts.ts";
import { postRequestHashWithoutDate } from "../domain/canonical.ts";
import { checkInvariants } from "../verify/invariants.ts";
import { errorCode, newOrg, ok, startLedger, type LedgerHarness } from "../test-support.ts";
import { createWallet } from "../usecases/wallets.ts";
import { depositToWallet, withdrawFromWallet } from "../usecases/movements.ts";
import { createParticipant } from "../usecases/participants.ts";
import { Poster } from "./poster.ts";

let h: LedgerHarness;

beforeAll(async () => {
  h = await startLedger({ poolMax: 12 });
});
afterAll(async () => {
  await h?.close();
});

async function consumerWallet(orgId: string, owner: string, opts: { redeemable?: boolean; transferable?: boolean } = {}): Promise<string> {
  const res = await createWallet(
    h.deps,
    { orgId, livemode: false },
    { owner_id: owner, redeemable: opts.redeemable ?? true, transferable: opts.transferable ?? true },
  );
  return String(res.wallet["id"]);
}

async function fund(orgId: string, walletId: string, amount: number, ref: string): Promise<void> {
  await depositToWallet(h.deps, { orgId, livemode: false }, walletId, { amount, reference_id: ref });
}

async function expectInvariants(orgId?: string): Promise<void> {
  const report = await checkInvariants(h.env.adminSql, orgId === undefined ? {} : { orgId });
  expect(report.violations).toEqual([]);
  expect(report.ok).toBe(true);
}

describe("post", () => {
  it("200 concurrent posts with one reference_id make exactly one transaction; the rest answer the duplicate", async () => {
    // Proves the unique key + claim-first design: one movement, 199 replays of the same stored result.
    const org = newOrg();
    const w = await consumerWallet(org, "buyer-dup");
    const request: PostRequestInput = {
      org_id: org,
      livemode: false,
      kind: "wallet_topup",
      reference_id: "dup-1",
      postings: [{ debit: { system: "sandbox_funding" }, credit: { wallet_id: w }, amount: 1234 }],
    };
    const outcomes = await Promise.all(Array.from({ length: 200 }, () => h.poster.post(request)));
    const fresh = outcomes.filter((o) => !o.duplicate);
    expect(fresh).toHaveLength(1);
    const txnId = fresh[0]?.result.transaction_id;
    for (const o of outcomes) {
      expect(o.result.transaction_id).toBe(txnId);
      expect(o.result.wallets[w]?.balance).toBe(1234);
    }
    const [count] = await h.env.adminSql<{ n: string }[]>`select count(*) as n from ledger.transactions where org_id = ${org}`;
    expect(Number(count?.n)).toBe(1);
    const [bal] = await h.env.adminSql<{ balance: string }[]>`select balance from ledger.accounts where id = ${w}`;
    expect(bal?.balance).toBe("1234");
    await expectInvariants(org);
  });

  it("100 concurrent withdrawals against a balance covering 50: exactly 50 succeed, 50 insufficient_balance, balance 0", async () => {
    // Proves the balance check happens under the wallet's row lock inside the posting transaction.
    const org = newOrg();
    const scope = { orgId: org, livemode: false };
    const w = await consumerWallet(org, "buyer-race");
    await fund(org, w, 50 * 100, "race-fund");
    const results = await Promise.allSettled(
      Array.from({ length: 100 }, (_, i) => withdrawFromWallet(h.deps, scope, w, { amount: 100, reference_id: `race-${i}` })),
    );
    const succeeded = results.filter((r) => r.status === "fulfilled");
    const failed = results.filter((r): r is PromiseRejectedResult => r.status === "rejected");
    expect(succeeded).toHaveLength(50);
    expect(failed).toHaveLength(50);
    for (const f of failed) expect((f.reason as DomainError).code).toBe("insufficient_balance");
    const [row] = await h.env.adminSql<{ balance: string }[]>`select balance from ledger.accounts where id = ${w}`;
    expect(row?.balance).toBe("0");
    const [txns] = await h.env.adminSql<{ n: string }[]>`select count(*) as n from ledger.transactions where org_id = ${org} and kind = 'wallet_withdrawal'`;
    expect(Number(txns?.n)).toBe(50);
    await expectInvariants(org);
  });

  it("the same key with a different request is idempotency_conflict and moves nothing", async () => {
    // Proves a reused key never returns another movement's result nor makes a second movement.
    const org = newOrg();
    const w = await consumerWallet(org, "buyer-conflict");
    const base = { org_id: org, livemode: false, kind: "wallet_topup", reference_id: "k1" };
    await h.poster.post({ ...base, postings: [{ debit: { system: "sandbox_funding" }, credit: { wallet_id: w }, amount: 100 }] });
    const err = await h.poster
      .post({ ...base, postings: [{ debit: { system: "sandbox_funding" }, credit: { wallet_id: w }, amount: 999 }] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DomainError);
    expect((err as DomainError).code).toBe("idempotency_conflict");
    expect((err as DomainError).extra?.["existing_transaction_id"]).toMatch(/^txn_/);
    const [row] = await h.env.adminSql<{ balance: string }[]>`select balance from ledger.accounts where id = ${w}`;
    expect(row?.balance).toBe("100");
    await expectInvariants(org);
  });

  it("the same key with another effective_date is idempotency_conflict; a transaction hashed before dates were still replays", async () => {
    // Proves the accounting date is part of what a reference_id stands for, without breaking replays of
    // transactions stored while their hash left the date out.
    const org = newOrg();
    const dated = (reference_id: string, effective_date: string): PostRequestInput => ({
      org_id: org,
      livemode: false,
      kind: "expense",
      reference_id,
      effective_date,
      postings: [{ debit: { system: "expense" }, credit: { system: "platform_cash" }, amount: 700 }],
    });
    const first = await h.poster.post(dated("exp-1", "2026-03-01"));
    expect(first.duplicate).toBe(false);
    expect((await h.poster.post(dated("exp-1", "2026-03-01"))).duplicate).toBe(true);
    const err = await h.poster.post(dated("exp-1", "2026-03-02")).catch((e: unknown) => e);
    expect((err as DomainError).code).toBe("idempotency_conflict");

    const older = await h.poster.post(dated("exp-2", "2026-04-01"));
    const withoutDate = postRequestHashWithoutDate(PostRequest.parse(dated("exp-2", "2026-04-01")));
    await h.env.adminSql`update ledger.transactions set request_hash = ${withoutDate ?? ""} where id = ${older.result.transaction_id}`;
    const replay = await h.poster.post(dated("exp-2", "2026-04-01"));
    expect(replay).toMatchObject({ duplicate: true, result: { transaction_id: older.result.transaction_id } });
    const [n] = await h.env.adminSql<{ n: string }[]>`select count(*) as n from ledger.transactions where org_id = ${org}`;
    expect(Number(n?.n)).toBe(2);
    await expectInvariants(org);
  });

  it("a failed check writes nothing, and the same reference may then be retried", async () => {
    // Proves insufficient_balance leaves no transaction, entry, hold or event behind.
    const org = newOrg();
    const a = await consumerWallet(org, "a");
    const b = await consumerWallet(org, "b");
    const req: PostRequestInput = {
      org_id: org,
      livemode: false,
      kind: "transfer",
      reference_id: "t1",
      postings: [{ debit: { wallet_id: a }, credit: { wallet_id: b }, amount: 500 }],
      holds_create: [{ wallet: { wallet_id: b }, amount: 500 }],
    };
    const outboxBefore = await h.env.adminSql`select count(*) as n from ledger.outbox where org_id = ${org}`;
    await expect(h.poster.post(req)).rejects.toMatchObject({ code: "insufficient_balance" });
    for (const table of ["transactions", "entries", "holds"]) {
      const [n] = await h.env.adminSql<{ n: string }[]>`select count(*) as n from ${h.env.adminSql(`ledger.${table}`)} where org_id = ${org}`;
      expect(Number(n?.n), table).toBe(0);
    }
    const outboxAfter = await h.env.adminSql`select count(*) as n from ledger.outbox where org_id = ${org}`;
    expect(outboxAfter).toEqual(outboxBefore);
    await fund(org, a, 500, "fund-a");
    const done = await h.poster.post(req);
    expect(done.duplicate).toBe(false);
    expect(done.result.wallets[b]).toEqual({ balance: 500, held_amount: 500, available_balance: 0 });
    await expectInvariants(org);
  });

  it("preconditions are checked on the locked wallet: available_gte above available is insufficient_balance", async () => {
    // Proves preconditions run inside the transaction and block the whole request.
    const org = newOrg();
    const a = await consumerWallet(org, "pre");
    await fund(org, a, 300, "pre-fund");
    const req = (ref: string, gte: number): PostRequestInput => ({
      org_id: org,
      livemode: false,
      kind: "spend",
      reference_id: ref,
      postings: [{ debit: { wallet_id: a }, credit: { system: "platform_revenue" }, amount: 100 }],
      preconditions: [{ wallet: { wallet_id: a }, available_gte: gte }],
    });
    await expect(h.poster.post(req("p1", 301))).rejects.toMatchObject({ code: "insufficient_balance" });
    const res = await h.poster.post(req("p2", 300));
    expect(res.result.wallets[a]?.balance).toBe(200);
    await expectInvariants(org);
  });

  it("a sale credits the creator and holds the share atomically; releasing with the transfer moves it", async () => {
    // Proves holds_create/holds_release and postings commit together, and the sale's remainder row is kept.
    const org = newOrg();
    const scope = { orgId: org, livemode: false };
    await createParticipant(h.deps, scope, { participant_id: "creator-1" });
    await createParticipant(h.deps, scope, { participant_id: "creator-2" });
    const sale = await h.poster.post({
      org_id: org,
      livemode: false,
      kind: "sale",
      reference_id: "sale-1",
      amount: 1000,
      postings: [
        { debit: { system: "platform_cash" }, credit: { participant_id: "creator-1" }, amount: 800 },
        { debit: { system: "platform_cash" }, credit: { system: "platform_revenue" }, amount: 200 },
      ],
      holds_create: [{ wallet: { participant_id: "creator-1" }, amount: 800, reason_code: "sale_hold", release_transfer_to_participant_id: "creator-2" }],
      sale: { sale_reference: "sale-1", participant_id: "creator-1", gross: 1000, creator_amount: 800, platform_amount: 200, hold_index: 0 },
    });
    const creatorWallet = Object.keys(sale.result.wallets)[0] ?? "";
    expect(sale.result.wallets[creatorWallet]).toEqual({ balance: 800, held_amount: 800, available_balance: 0 });
    const hold = sale.result.holds_created[0];
    expect(hold?.reference_id).toBe("sale:sale-1");
    const [saleRow] = await h.env.adminSql`select gross, refunded_amount, hold_id from ledger.sales where org_id = ${org}`;
    expect(saleRow).toEqual({ gross: "1000", refunded_amount: "0", hold_id: hold?.hold_id });
    // While held, nothing can move the share out.
    await expect(
      h.poster.post({
        org_id: org,
        livemode: false,
        kind: "transfer",
        reference_id: "steal",
        postings: [{ debit: { participant_id: "creator-1" }, credit: { participant_id: "creator-2" }, amount: 1 }],
      }),
    ).rejects.toMatchObject({ code: "insufficient_balance" });
    const release = await h.poster.post({
      org_id: org,
      livemode: false,
      kind: "hold_release",
      reference_id: hold?.hold_id ?? "",
      holds_release: [{ hold_id: hold?.hold_id ?? "", transfer_executed: true }],
      postings: [{ debit: { participant_id: "creator-1" }, credit: { participant_id: "creator-2" }, amount: 800 }],
    });
    expect(release.result.holds_released[0]?.transfer_executed).toBe(true);
    expect(release.result.wallets[creatorWallet]).toEqual({ balance: 0, held_amount: 0, available_balance: 0 });
    // A second release of the same hold under another key is refused inside the transaction.
    await expect(
      h.poster.post({ org_id: org, livemode: false, kind: "other_release", reference_id: "r2", holds_release: [hold?.hold_id ?? ""] }),
    ).rejects.toMatchObject({ code: "hold_already_released" });
    // Events: one per committed transaction and hold change, none for the refused attempts; the relay publishes them.
    const events = await h.env.adminSql<{ type: string; payload: { data: Record<string, unknown> } }[]>`
      select type, payload from ledger.outbox where org_id = ${org} order by seq`;
    expect(events.map((e) => e.type)).toEqual(["ledger.transaction.posted", "hold.created", "ledger.transaction.posted", "hold.released"]);
    expect(events[1]?.payload.data).toMatchObject({ hold_id: hold?.hold_id, amount: 800, participant_id: "creator-1", hold_reason_code: "sale_hold" });
    expect(events[3]?.payload.data).toMatchObject({ hold_id: hold?.hold_id, transfer_executed: true, transaction_id: release.result.transaction_id });
    await waitFor(async () => {
      const [row] = await h.env.adminSql<{ n: number }[]>`select count(*)::int as n from ledger.outbox where org_id = ${org} and published_at is null`;
      return row?.n === 0;
    });
    await expectInvariants(org);
  });

  it("money moves only through active wallets: a frozen wallet refuses postings and holds", async () => {
    // Proves wallet status is checked on the locked row inside the transaction.
    const org = newOrg();
    const w = await consumerWallet(org, "frozen");
    await fund(org, w, 100, "fz-fund");
    await h.env.adminSql`update ledger.accounts set status = 'frozen' where id = ${w}`;
    const req = (ref: string, extra: Partial<PostRequestInput>): PostRequestInput => ({
      org_id: org,
      livemode: false,
      kind: "spend",
      reference_id: ref,
      ...extra,
    });
    await expect(
      h.poster.post(req("fz-1", { postings: [{ debit: { wallet_id: w }, credit: { system: "platform_revenue" }, amount: 1 }] })),
    ).rejects.toMatchObject({ code: "wallet_not_active" });
    await expect(h.poster.post(req("fz-2", { holds_create: [{ wallet: { wallet_id: w }, amount: 1 }] }))).rejects.toMatchObject({ code: "wallet_not_active" });
    await expectInvariants(org);
  });

  it("system accounts spread over balance shards and their sum equals their entries", async () => {
    // Proves the hot-account design: postings land on different shards; the balance is their sum.
    const org = newOrg();
    const w = await consumerWallet(org, "sharded");
    let shard = 0;
    const pinned = new Poster(h.sql, { pickShard: () => shard++ % BALANCE_SHARDS });
    for (let i = 0; i < 20; i++) {
      await pinned.post({
        org_id: org,
        livemode: false,
        kind: "wallet_topup",
        reference_id: `s${i}`,
        postings: [{ debit: { system: "sandbox_funding" }, credit: { wallet_id: w }, amount: 10 }],
      });
    }
    const shards = await h.env.adminSql<{ shard: number; balance: string }[]>`
      select s.shard, s.balance from ledger.account_balance_shards s join ledger.accounts a on a.id = s.account_id
      where a.org_id = ${org} and a.account_type = 'sandbox_funding' order by s.shard`;
    expect(shards).toHaveLength(BALANCE_SHARDS);
    expect(shards.filter((s) => s.balance !== "0").length).toBe(BALANCE_SHARDS);
    expect(shards.reduce((sum, s) => sum + Number(s.balance), 0)).toBe(200);
    await expectInvariants(org);
  });

  it("answers svc.ledger.post over NATS, with duplicate on replay and typed errors", async () => {
    // Proves the internal RPC contract other services use: result + duplicate flag, DomainError codes.
    const org = newOrg();
    const w = await consumerWallet(org, "rpc");
    const request = {
      org_id: org,
      livemode: false,
      kind: "wallet_topup",
      reference_id: "rpc-1",
      postings: [{ debit: { system: "sandbox_funding" }, credit: { wallet_id: w }, amount: 42 }],
    };
    const first = ok(await h.postRpc(request));
    expect(first.body["duplicate"]).toBe(false);
    expect(first.body["transaction_id"]).toMatch(/^txn_/);
    const again = ok(await h.postRpc(request));
    expect(again.body).toEqual({ ...first.body, duplicate: true });
    expect(errorCode(await h.postRpc({ ...request, postings: [] }))).toBe("validation_error");
    expect(
      errorCode(await h.postRpc({ ...request, reference_id: "rpc-self", postings: [{ debit: { wallet_id: w }, credit: { wallet_id: w }, amount: 1 }] })),
    ).toBe("validation_error");
    expect(
      errorCode(
        await h.postRpc({ ...request, reference_id: "rpc-bad", postings: [{ debit: { system: "no_such_account" }, credit: { wallet_id: w }, amount: 1 }] }),
      ),
    ).toBe("validation_error");
    expect(
      errorCode(
        await h.postRpc({ ...request, reference_id: "rpc-2", postings: [{ debit: { wallet_id: w }, credit: { system: "platform_cash" }, amount: 43 }] }),
      ),
    ).toBe("insufficient_balance");
    expect(
      errorCode(
        await h.postRpc({
          ...request,
          reference_id: "rpc-3",
          postings: [{ debit: { system: "platform_cash" }, credit: { wallet_id: "00000000-0000-4000-8000-000000000000" }, amount: 1 }],
        }),
      ),
    ).toBe("wallet_not_found");
    // Another org cannot post to this org's wallet.
    expect(errorCode(await h.postRpc({ ...request, org_id: newOrg() }))).toBe("wallet_not_found");
    await expectInvariants();
  });
});
