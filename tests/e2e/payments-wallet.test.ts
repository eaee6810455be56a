// Wallet sessions, the hosted wallet page's refusals, and shared-wallet spend with its reversal, through the gateway.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkInvariants } from "../../services/ledger/src/verify/invariants.ts";
import type { PaymentsService } from "../../services/payments/src/service.ts";
import { call, startStack, type Stack } from "./stack.ts";

let s: Stack;
let api: (method: string, path: string, body?: unknown, key?: string) => Promise<{ status: number; body: Record<string, unknown> }>;

beforeAll(async () => {
  s = await startStack({ services: ["ledger", "payments", "refunds"] });
  api = async (method, path, body, key = s.testKey) => {
    const r = await call(s.baseUrl, method, path, { key, ...(body !== undefined ? { body } : {}) });
    return { status: r.status, body: r.body };
  };
});
afterAll(async () => {
  await s?.stop();
});

let n = 0;
const uniq = (p: string) => `${p}_${Date.now().toString(36)}_${n++}`;

async function participant(split?: number): Promise<string> {
  const id = uniq("creator");
  expect((await api("POST", "/v1/participants", { participant_id: id, ...(split !== undefined ? { default_split_percent: split } : {}) })).status).toBe(201);
  return id;
}
async function fundedBuyer(owner: string, amount: number): Promise<string> {
  const w = await api("POST", "/v1/wallets", { owner_id: owner });
  const id = String((w.body["wallet"] as Record<string, unknown>)["id"]);
  expect((await api("POST", `/v1/wallets/${id}/topups`, { amount, reference_id: uniq("top") })).status).toBe(201);
  return id;
}
const balanceOf = async (walletId: string) => Number(((await api("GET", `/v1/wallets/${walletId}`)).body["wallet"] as Record<string, unknown>)["balance"]);
const creator = async (pid: string) => (await api("GET", `/v1/participants/${pid}`)).body["participant"] as Record<string, number>;

describe("wallet sessions", () => {
  // Proves buyer defaults (permissions, 30 min expiry, wallet_url on the alt listener) and the idempotency replay/conflict.
  it("creates buyer sessions with defaults and replays keys", async () => {
    const owner = uniq("user");
    const body = { owner_id: owner, idempotency_key: uniq("k"), metadata: { a: 1 } };
    const r = await api("POST", "/v1/wallet-sessions", body);
    expect(r.status).toBe(201);
    const ws = r.body["wallet_session"] as Record<string, unknown>;
    expect(ws).toMatchObject({
      object: "wallet_session",
      kind: "user_wallet",
      owner_id: owner,
      permissions: ["view_balance", "list_activity", "top_up"],
      status: "active",
      metadata: { a: 1 },
    });
    expect(String(ws["id"])).toMatch(/^wals_[a-z0-9]{24}$/);
    expect(ws["wallet_url"]).toBe(`${s.altUrl}/v1/wallet/${String(ws["id"])}`);
    const ttl = Date.parse(String(ws["expires_at"])) - Date.now();
    expect(ttl).toBeGreaterThan(29 * 60_000);
    expect(ttl).toBeLessThanOrEqual(30 * 60_000);
    const replay = await api("POST", "/v1/wallet-sessions", body);
    expect(replay.status).toBe(200);
    expect(replay.body).toMatchObject({ idempotent: true, wallet_session: ws });
    const conflict = await api("POST", "/v1/wallet-sessions", { ...body, expires_in_minutes: 5 });
    expect(conflict.status).toBe(409);
    expect(conflict.body["error_code"]).toBe("idempotency_conflict");
  });

  // Proves creator sessions get view_balance + list_activity on the participant's wallet and cannot ask for top_up.
  it("creator sessions", async () => {
    const pid = await participant();
    const r = await api("POST", "/v1/wallet-sessions", { owner_id: pid, owner_type: "participant", expires_in_minutes: 5 });
    expect(r.status).toBe(201);
    const ws = r.body["wallet_session"] as Record<string, unknown>;
    expect(ws).toMatchObject({
      kind: "creator_balance",
      identity_source: "participant_identity_links",
      wallet_type: "creator_earnings",
      permissions: ["view_balance", "list_activity"],
    });
    expect(ws["wallet_id"]).toBe((await creator(pid))["wallet_id"]);
    expect(Date.parse(String(ws["expires_at"])) - Date.now()).toBeLessThanOrEqual(5 * 60_000);
    const page = await fetch(String(ws["wallet_url"]));
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain("Creator earnings");
    expect(html).not.toContain("topup-form");
    const topUp = await api("POST", "/v1/wallet-sessions", { owner_id: pid, owner_type: "creator", permissions: ["top_up"] });
    expect(topUp.status).toBe(400);
    expect(topUp.body["error_code"]).toBe("validation_error");
  });

  // Proves a sandbox buyer with only customer_email gets a stable test wallet (case-insensitive); live needs an owner.
  it("derives a stable sandbox wallet from customer_email", async () => {
    const email = `${uniq("Buyer")}@Example.com`;
    const a = (await api("POST", "/v1/wallet-sessions", { customer_email: email })).body["wallet_session"] as Record<string, unknown>;
    const b = (await api("POST", "/v1/wallet-sessions", { customer_email: email.toLowerCase() })).body["wallet_session"] as Record<string, unknown>;
    expect(a["wallet_id"]).toBe(b["wallet_id"]);
    expect(a["id"]).not.toBe(b["id"]);
    const live = await api("POST", "/v1/wallet-sessions", { customer_email: email }, s.liveKey);
    expect(live.status).toBe(400);
    expect(live.body["error_code"]).toBe("validation_error");
  });

  // Proves expired sessions are refused by the page and its top-up form; unknown sessions are 404; no form posts money then.
  it("hosted wallet page refuses expired sessions", async () => {
    const owner = uniq("user");
    const walletId = await fundedBuyer(owner, 500);
    const ws = (await api("POST", "/v1/wallet-sessions", { owner_id: owner })).body["wallet_session"] as Record<string, string>;
    const ok = await fetch(ws["wallet_url"]!);
    expect(ok.status).toBe(200);
    expect(await ok.text()).toContain("$5.00");
    await s.env.adminSql`update payments.wallet_sessions set expires_at = now() - interval '1 second' where id = ${ws["id"]!}`;
    const expired = await fetch(ws["wallet_url"]!);
    expect(expired.status).toBe(410);
    expect(await expired.text()).toContain("expired");
    const post = await fetch(`${ws["wallet_url"]!}/topup`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ amount: "10.00", card_number: "4242424242424242", nonce: "6f1c1a52-8d5e-4f7e-9a52-0c4a2b1d9e11" }),
      redirect: "manual",
    });
    expect(post.status).toBe(410);
    expect(await balanceOf(walletId)).toBe(500);
    expect((await fetch(`${s.altUrl}/v1/wallet/wals_doesnotexist`)).status).toBe(404);
  });
});

describe("shared wallet spend", () => {
  // Proves the atomic split from the buyer's wallet, reference_id dedupe (409 with the spend), conflicts, and insufficient funds moving nothing.
  it("spends with a split and dedupes", async () => {
    const pid = await participant(60);
    const sub = uniq("oidc|sub");
    const walletId = await fundedBuyer(sub, 10_000);
    const body = { consumer_sub: sub, amount: 3000, reference_id: uniq("spend"), creator_id: pid, creator_percent: 70, sales_tax: 300, product_id: "p1" };
    const r = await api("POST", "/v1/wallets/shared-spend", body);
    expect(r.status).toBe(201);
    const spend = r.body["spend"] as Record<string, unknown>;
    // floor(2700 × 70 %) = 1890 to the creator, 810 to the platform, 300 tax.
    expect(spend).toMatchObject({
      reference_id: body.reference_id,
      amount_cents: 3000,
      creator_id: pid,
      wallet_balance_cents: 7000,
      creator_balance_cents: 1890,
      creator_amount_cents: 1890,
      platform_amount_cents: 810,
    });
    expect(spend["platform_transaction_id"]).toMatch(/^txn_/);

    const dup = await api("POST", "/v1/wallets/shared-spend", body);
    expect(dup.status).toBe(409);
    expect(dup.body["error_code"]).toBe("duplicate_reference_id");
    expect(dup.body["existing_transaction_id"]).toBe(spend["platform_transaction_id"]);
    expect(dup.body["spend"]).toMatchObject({ reference_id: body.reference_id, amount_cents: 3000 });
    const conflict = await api("POST", "/v1/wallets/shared-spend", { ...body, amount: 3001 });
    expect(conflict.status).toBe(409);
    expect(conflict.body["error_code"]).toBe("idempotency_conflict");
    const poor = await api("POST", "/v1/wallets/shared-spend", { ...body, reference_id: uniq("spend"), amount: 7001 });
    expect(poor.status).toBe(422);
    expect(poor.body["error_code"]).toBe("insufficient_balance");
    expect(await balanceOf(walletId)).toBe(7000);
    expect((await creator(pid))["ledger_balance_cents"]).toBe(1890);

    // Without creator_percent the participant's default split (60 %) applies.
    const d = await api("POST", "/v1/wallets/shared-spend", { consumer_sub: sub, amount: 1000, reference_id: uniq("spend"), creator_id: pid });
    expect(d.body["spend"]).toMatchObject({ creator_amount_cents: 600, platform_amount_cents: 400, wallet_balance_cents: 6000 });
  });

  // Proves reversal makes the buyer whole, takes the split back, stores the reason, and a second reversal is 409 with the first.
  it("reverses once", async () => {
    const pid = await participant(80);
    const sub = uniq("sub");
    const walletId = await fundedBuyer(sub, 5000);
    const spend = (await api("POST", "/v1/wallets/shared-spend", { consumer_sub: sub, amount: 2500, reference_id: uniq("spend"), creator_id: pid })).body[
      "spend"
    ] as Record<string, string>;
    const txn = spend["platform_transaction_id"]!;
    const r = await api("POST", "/v1/wallets/shared-spend/reverse", { sale_transaction_id: txn, reason: "buyer dispute" });
    expect(r.status).toBe(200);
    expect(r.body["reversal"]).toMatchObject({
      sale_transaction_id: txn,
      status: "reversed",
      wallet_balance_cents: 5000,
      creator_balance_cents: 0,
      reason: "buyer dispute",
    });
    expect(await balanceOf(walletId)).toBe(5000);
    expect((await creator(pid))["ledger_balance_cents"]).toBe(0);
    const [audit] = await s.env.adminSql<
      { reason: string; status: string }[]
    >`select reason, status from payments.shared_spend_reversals where sale_transaction_id = ${txn}`;
    expect(audit).toEqual({ reason: "buyer dispute", status: "reversed" });
    const again = await api("POST", "/v1/wallets/shared-spend/reverse", { sale_transaction_id: txn, reason: "again" });
    expect(again.status).toBe(409);
    expect(again.body["error_code"]).toBe("duplicate_reversal_reference");
    expect(again.body["reversal"]).toEqual(r.body["reversal"]);
    expect(await balanceOf(walletId)).toBe(5000);
  });

  // Proves concurrent duplicate spends (same reference_id) and concurrent reversals each move money once.
  it("concurrent duplicates move money once", async () => {
    const pid = await participant(50);
    const sub = uniq("sub");
    const walletId = await fundedBuyer(sub, 10_000);
    const body = { consumer_sub: sub, amount: 4000, reference_id: uniq("spend"), creator_id: pid };
    const spends = await Promise.all(Array.from({ length: 10 }, () => api("POST", "/v1/wallets/shared-spend", body)));
    expect(spends.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409, 409, 409, 409, 409, 409]);
    expect(await balanceOf(walletId)).toBe(6000);
    const txn = String((spends.find((r) => r.status === 201)!.body["spend"] as Record<string, unknown>)["platform_transaction_id"]);
    const reversals = await Promise.all(Array.from({ length: 10 }, () => api("POST", "/v1/wallets/shared-spend/reverse", { sale_transaction_id: txn })));
    expect(reversals.every((r) => r.status === 200 || (r.status === 409 && r.body["error_code"] === "duplicate_reversal_reference"))).toBe(true);
    expect(await balanceOf(walletId)).toBe(10_000);
    expect((await creator(pid))["ledger_balance_cents"]).toBe(0);
    const [n] = await s.env.adminSql<
      { n: string }[]
    >`select count(*)::text as n from ledger.transactions where kind = 'refund' and reference_id = ${`shared_spend_reversal:${txn}`}`;
    expect(n?.n).toBe("1");
  });

  // Proves the reconciler finishes a reversal whose intent was recorded but whose ledger post never happened (a
  // crash in between): the buyer is made whole once, and a client's retry then answers the finished reversal.
  it("the reconciler finishes a reversal left between its intent and the ledger", async () => {
    const pid = await participant(50);
    const sub = uniq("sub");
    const walletId = await fundedBuyer(sub, 5_000);
    const spend = await api("POST", "/v1/wallets/shared-spend", { consumer_sub: sub, amount: 3000, reference_id: uniq("spend"), creator_id: pid });
    expect(spend.status).toBe(201);
    const txn = String((spend.body["spend"] as Record<string, unknown>)["platform_transaction_id"]);
    const [row] = await s.env.adminSql<{ org_id: string; reference_id: string }[]>`
      select org_id, reference_id from payments.shared_spends where transaction_id = ${txn}`;
    // What the reverse endpoint records before it asks the ledger, left there long enough for the reconciler.
    await s.env.adminSql.begin(async (tx) => {
      await tx`update payments.shared_spends set status = 'reversing' where transaction_id = ${txn}`;
      await tx`
        insert into payments.shared_spend_reversals (org_id, livemode, sale_transaction_id, spend_reference_id, reason, metadata, request_id, key_id, status, updated_at)
        values (${row!.org_id}, false, ${txn}, ${row!.reference_id}, 'crashed', '{}', 'req_crash', 'key_crash', 'reversing', now() - interval '1 hour')`;
    });
    const payments = s.services["payments"] as PaymentsService;
    expect(await payments.reconciler.runOnce()).toBeGreaterThanOrEqual(1);
    expect(await balanceOf(walletId)).toBe(5_000);
    const [settled] = await s.env.adminSql<{ status: string }[]>`select status from payments.shared_spend_reversals where sale_transaction_id = ${txn}`;
    expect(settled?.status).toBe("reversed");
    const retry = await api("POST", "/v1/wallets/shared-spend/reverse", { sale_transaction_id: txn });
    expect([retry.status, retry.body["error_code"]]).toEqual([409, "duplicate_reversal_reference"]);
    const [n] = await s.env.adminSql<
      { n: string }[]
    >`select count(*)::text as n from ledger.transactions where kind = 'refund' and reference_id = ${`shared_spend_reversal:${txn}`}`;
    expect(n?.n).toBe("1");
  });

  // Proves a shared spend is a sale like any other: refunded in part through /v1/refunds back to the buyer's wallet,
  // and its reversal then gives back only what remains.
  it("refunds a spend in part through /v1/refunds, and the reversal gives back the rest", async () => {
    const pid = await participant(60);
    const sub = uniq("sub");
    const walletId = await fundedBuyer(sub, 2000);
    const ref = uniq("spend");
    const spend = (await api("POST", "/v1/wallets/shared-spend", { consumer_sub: sub, amount: 2000, reference_id: ref, creator_id: pid })).body[
      "spend"
    ] as Record<string, string>;
    const refund = await api("POST", "/v1/refunds", { sale_reference: `shared_spend:${ref}`, amount: 500, reason: "damaged", idempotency_key: uniq("rf") });
    expect(refund.status).toBe(201);
    expect(await balanceOf(walletId)).toBe(500);
    const r = await api("POST", "/v1/wallets/shared-spend/reverse", { sale_transaction_id: spend["platform_transaction_id"] });
    expect(r.status).toBe(200);
    expect(r.body["reversal"]).toMatchObject({ amount_cents: 1500, wallet_balance_cents: 2000 });
    expect((await creator(pid))["ledger_balance_cents"]).toBe(0);
  });

  // Proves a reversal never fails on a creator whose share is no longer available: the shortfall goes to creator_receivable and the buyer is still made whole.
  it("books the creator's shortfall to creator_receivable", async () => {
    const pid = await participant(100);
    const sub = uniq("sub");
    const walletId = await fundedBuyer(sub, 1000);
    const spend = (await api("POST", "/v1/wallets/shared-spend", { consumer_sub: sub, amount: 1000, reference_id: uniq("spend"), creator_id: pid })).body[
      "spend"
    ] as Record<string, string>;
    // 700 of the creator's 1000 become unavailable (held).
    expect((await api("POST", "/v1/holds", { participant_id: pid, amount: 700, reference_id: uniq("hold") })).status).toBe(201);
    const r = await api("POST", "/v1/wallets/shared-spend/reverse", { sale_transaction_id: spend["platform_transaction_id"] });
    expect(r.status).toBe(200);
    expect(r.body["reversal"]).toMatchObject({
      creator_reversed_cents: 300,
      creator_receivable_cents: 700,
      wallet_balance_cents: 1000,
      creator_balance_cents: 700,
    });
    expect(await balanceOf(walletId)).toBe(1000);
  });
});

describe("ledger invariants", () => {
  // Proves everything above left the ledger consistent: balanced transactions, wallets never negative, holds within balances.
  it("hold after every flow in this file", async () => {
    const report = await checkInvariants(s.env.adminSql);
    expect(report.violations).toEqual([]);
    expect(report.ok).toBe(true);
  });
});
