// Payouts through the gateway in sandbox: the spec's typical flow steps 1, 2, 6 and 7, fees to the cent, bank
// accounts sealed at rest, eligibility, idempotency on reference_id, concurrency against one balance, held
// funds never paid out, scopes, and bad input on every field of every payout operation with no money moved.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "@treasury/testing";
import { apiOf, BANK_ACCOUNT, creatorWallet, fund, newParticipant, startPayoutsStack, type Api, type PayoutsStack } from "./payouts-stack.ts";

let p: PayoutsStack;
let api: Api;
let key: string;

beforeAll(async () => {
  p = await startPayoutsStack();
  api = apiOf(p);
  key = p.s.testKey;
}, 120_000);
afterAll(async () => {
  await p?.stop();
});

type Payout = Record<string, unknown> & { id: string; status: string; transaction_id: string };
const payoutOf = (r: { body: Record<string, unknown> }) => r.body["payout"] as Payout;

async function entriesOf(reference: string): Promise<Array<{ account_type: string; entry_type: string; amount: string }>> {
  return p.env.adminSql<Array<{ account_type: string; entry_type: string; amount: string }>>`
    select a.account_type, e.entry_type, e.amount::text as amount
      from ledger.entries e join ledger.accounts a on a.id = e.account_id join ledger.transactions t on t.id = e.transaction_id
     where t.reference_id = ${reference} order by e.seq`;
}
async function referenceCount(reference: string): Promise<number> {
  const [r] = await p.env.adminSql<{ n: string }[]>`select count(*)::text as n from ledger.transactions where reference_id = ${reference}`;
  return Number(r?.n ?? 0);
}
async function unpublished(id: string): Promise<number> {
  const [r] = await p.env.adminSql<
    { n: string }[]
  >`select count(*)::text as n from payouts.outbox where published_at is null and payload->'data'->>'id' = ${id}`;
  return Number(r?.n ?? 0);
}
async function ledgerTransactions(): Promise<number> {
  const [r] = await p.env.adminSql<{ n: string }[]>`select count(*)::text as n from ledger.transactions`;
  return Number(r?.n ?? 0);
}
async function payoutEvents(id: string): Promise<string[]> {
  const rows = await p.env.adminSql<{ type: string }[]>`select type from payouts.outbox where payload->'data'->>'id' = ${id} order by seq`;
  return rows.map((r) => r.type);
}

describe("typical flow (spec steps 1, 2, 6, 7)", () => {
  it("participant → sandbox checkout completed → eligibility → payout → balance exactly before − amount", async () => {
    // Proves the sandbox payout end to end: paid at once with no rail, one ledger movement, created then executed events published.
    const pid = await newParticipant(api, key);
    const created = await api("POST", "/v1/checkout-sessions", key, { participant_id: pid, amount: 10_000, creator_percent: 80 });
    expect(created.status).toBe(201);
    const csId = (created.body["checkout_session"] as { id: string }).id;
    expect((await api("POST", `/v1/sandbox/checkouts/${csId}/complete`, key, { idempotency_key: `c_${csId}` })).status).toBe(200);
    const before = await creatorWallet(api, key, pid);
    expect(before.balance).toBe(8000);

    const elig = await api("GET", `/v1/participants/${pid}/payout-eligibility`, key);
    expect(elig.status).toBe(200);
    expect(elig.body["eligibility"]).toMatchObject({
      participant_id: pid,
      eligible: true,
      available_balance_cents: 8000,
      issues: [],
      requirements: { environment: "sandbox", positive_balance: { required: true, met: true }, kyc_approved: { required: false } },
    });

    const r = await api("POST", "/v1/payouts", key, {
      participant_id: pid,
      amount: 1234,
      reference_id: `po_ref_${pid}`,
      fees: 34,
      fees_paid_by: "creator",
      description: "March earnings",
      metadata: { period: "2026-03" },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    const payout = payoutOf(r);
    expect(payout.id).toMatch(/^po_[a-z0-9]{24}$/);
    expect(payout).toMatchObject({
      participant_id: pid,
      wallet_id: before.id,
      status: "paid",
      payout_rail: "sandbox",
      simulated: true,
      livemode: false,
      gross_amount_cents: 1234,
      fees_cents: 34,
      net_amount_cents: 1200,
      fees_paid_by: "creator",
      previous_balance_cents: 8000,
      new_balance_cents: 6766,
      bank_transfer_id: null,
      failure_reason: null,
      destination: null,
      reference_id: `po_ref_${pid}`,
      description: "March earnings",
      metadata: { period: "2026-03" },
    });
    expect(payout.transaction_id).toMatch(/^txn_/);
    const after = await creatorWallet(api, key, pid);
    expect(after.balance).toBe(before.balance - 1234);

    // One balanced movement: the wallet gives 1234, the bank's 1200 leaves cash, the creator's fee is revenue.
    expect(await entriesOf(`payout:${payout.id}`)).toEqual([
      { account_type: "creator_earnings", entry_type: "debit", amount: "1200" },
      { account_type: "platform_cash", entry_type: "credit", amount: "1200" },
      { account_type: "creator_earnings", entry_type: "debit", amount: "34" },
      { account_type: "platform_revenue", entry_type: "credit", amount: "34" },
    ]);
    expect(await payoutEvents(payout.id)).toEqual(["payout.created", "payout.executed"]);
    await waitFor(async () => (await unpublished(payout.id)) === 0);
    const [created0] = await p.env.adminSql<
      { data: Record<string, unknown> }[]
    >`select payload->'data' as data from payouts.outbox where type = 'payout.created' and payload->'data'->>'id' = ${payout.id}`;
    expect(created0?.data).toMatchObject({ id: payout.id, status: "pending", gross_amount_cents: 1234 });

    const got = await api("GET", `/v1/payouts/${payout.id}`, key);
    expect(got.status).toBe(200);
    expect(payoutOf(got)).toEqual(payout);
    const list = await api("GET", `/v1/payouts?participant_id=${pid}`, key);
    expect(list.body).toMatchObject({ total: 1, limit: 25, offset: 0, payouts: [payout] });
    expect((await api("GET", `/v1/payouts?participant_id=${pid}&status=paid&limit=1`, key)).body["payouts"]).toEqual([payout]);
    expect((await api("GET", `/v1/payouts?participant_id=${pid}&status=failed`, key)).body).toMatchObject({ total: 0, payouts: [] });
    // Live never sees sandbox.
    expect((await api("GET", `/v1/payouts/${payout.id}`, p.s.liveKey)).body).toMatchObject({ error_code: "payout_not_found" });
  });

  it("platform-paid fees: the bank gets the whole amount and the fee is a platform expense", async () => {
    // Proves fees_paid_by platform to the cent, and the default when fees_paid_by is absent.
    const pid = await newParticipant(api, key);
    await fund(api, key, pid, 5000);
    const r = await api("POST", "/v1/payouts", key, { participant_id: pid, amount: 2000, reference_id: `plat_${pid}`, fees: 75 });
    expect(r.status).toBe(201);
    const payout = payoutOf(r);
    expect(payout).toMatchObject({
      gross_amount_cents: 2000,
      fees_cents: 75,
      net_amount_cents: 2000,
      fees_paid_by: "platform",
      previous_balance_cents: 5000,
      new_balance_cents: 3000,
    });
    expect(await entriesOf(`payout:${payout.id}`)).toEqual([
      { account_type: "creator_earnings", entry_type: "debit", amount: "2000" },
      { account_type: "platform_cash", entry_type: "credit", amount: "2000" },
      { account_type: "expense", entry_type: "debit", amount: "75" },
      { account_type: "platform_cash", entry_type: "credit", amount: "75" },
    ]);
    expect((await creatorWallet(api, key, pid)).balance).toBe(3000);
  });
});

describe("bank accounts", () => {
  it("checks the routing number, seals the account number and shows only its last four digits", async () => {
    // Proves PUT (201 then 200 on replace), GET masked, nothing of the number in clear in the database, isolation by environment.
    const pid = await newParticipant(api, key);
    expect((await api("GET", `/v1/participants/${pid}/bank-account`, key)).body).toMatchObject({ error_code: "bank_account_not_found" });
    const put = await api("PUT", `/v1/participants/${pid}/bank-account`, key, BANK_ACCOUNT);
    expect(put.status, JSON.stringify(put.body)).toBe(201);
    expect(put.body["bank_account"]).toMatchObject({
      participant_id: pid,
      account_holder_name: "Ada Lovelace",
      routing_number: "011000015",
      account_type: "checking",
      last4: "6789",
      status: "active",
    });
    expect(JSON.stringify(put.body)).not.toContain("000123456789");
    const got = await api("GET", `/v1/participants/${pid}/bank-account`, key);
    expect(got.status).toBe(200);
    expect(got.body["bank_account"]).toEqual(put.body["bank_account"]);
    const [row] = await p.env.adminSql<{ all: string }[]>`select row_to_json(b)::text as all from payouts.bank_accounts b where participant_id = ${pid}`;
    expect(row?.all).not.toContain("000123456789");
    expect(row?.all).not.toContain("Ada Lovelace");
    const replaced = await api("PUT", `/v1/participants/${pid}/bank-account`, key, {
      ...BANK_ACCOUNT,
      routing_number: "121000358",
      account_number: "55554444",
      account_type: "savings",
    });
    expect(replaced.status).toBe(200);
    expect(replaced.body["bank_account"]).toMatchObject({ routing_number: "121000358", account_type: "savings", last4: "4444" });
    expect((await api("GET", `/v1/participants/${pid}/bank-account`, p.s.liveKey)).body).toMatchObject({ error_code: "bank_account_not_found" });
    expect((await api("PUT", `/v1/participants/nobody_here/bank-account`, key, BANK_ACCOUNT)).body).toMatchObject({ error_code: "participant_not_found" });
  });
});

describe("eligibility", () => {
  it("sandbox needs only a positive available balance; held funds do not count", async () => {
    // Proves insufficient_balance on an empty wallet and on one whose only funds are held.
    const pid = await newParticipant(api, key);
    const empty = await api("GET", `/v1/participants/${pid}/payout-eligibility`, key);
    expect(empty.body["eligibility"]).toMatchObject({ eligible: false, available_balance_cents: 0, issues: ["insufficient_balance"] });
    const cs = await api("POST", "/v1/checkout-sessions", key, { participant_id: pid, amount: 3000, creator_percent: 100, hold_funds: true });
    const csId = (cs.body["checkout_session"] as { id: string }).id;
    expect((await api("POST", `/v1/sandbox/checkouts/${csId}/complete`, key, {})).status).toBe(200);
    const held = await api("GET", `/v1/participants/${pid}/payout-eligibility`, key);
    expect(held.body["eligibility"]).toMatchObject({ eligible: false, available_balance_cents: 0, issues: ["insufficient_balance"] });
    // Only available balance is paid out, never held funds: the ledger refuses under the wallet's lock.
    const r = await api("POST", "/v1/payouts", key, { participant_id: pid, amount: 1, reference_id: `held_${pid}` });
    expect(r.status).toBe(422);
    expect(r.body).toMatchObject({ success: false, error_code: "insufficient_balance" });
    expect(await creatorWallet(api, key, pid)).toMatchObject({ balance: 3000, held_amount: 3000, available_balance: 0 });
    expect((await api("GET", `/v1/participants/nobody_x/payout-eligibility`, key)).body).toMatchObject({ error_code: "participant_not_found" });
  });
});

describe("idempotency on reference_id", () => {
  it("a replay answers 409 with the existing payout, a different body is a conflict, and money moves once", async () => {
    // Proves duplicate_reference_id (with the payout and existing_transaction_id) and idempotency_conflict, one ledger movement.
    const pid = await newParticipant(api, key);
    await fund(api, key, pid, 1000);
    const body = { participant_id: pid, amount: 300, reference_id: `dup_${pid}` };
    const first = await api("POST", "/v1/payouts", key, body);
    expect(first.status).toBe(201);
    const again = await api("POST", "/v1/payouts", key, body);
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({
      success: false,
      error_code: "duplicate_reference_id",
      existing_transaction_id: payoutOf(first).transaction_id,
      payout: payoutOf(first),
    });
    const other = await api("POST", "/v1/payouts", key, { ...body, amount: 301 });
    expect(other.status).toBe(409);
    expect(other.body["error_code"]).toBe("idempotency_conflict");
    expect((await creatorWallet(api, key, pid)).balance).toBe(700);
    expect(await referenceCount(`payout:${payoutOf(first).id}`)).toBe(1);
  });

  it("concurrent duplicates move money once", async () => {
    // Proves 12 simultaneous requests with one reference_id: one 201, eleven 409, one payout, one movement.
    const pid = await newParticipant(api, key);
    await fund(api, key, pid, 1000);
    const body = { participant_id: pid, amount: 250, reference_id: `race_${pid}` };
    const all = await Promise.all(Array.from({ length: 12 }, () => api("POST", "/v1/payouts", key, body)));
    expect(all.map((r) => r.status).sort()).toEqual([201, ...Array<number>(11).fill(409)]);
    expect((await creatorWallet(api, key, pid)).balance).toBe(750);
    expect((await api("GET", `/v1/payouts?participant_id=${pid}`, key)).body["total"]).toBe(1);
  });

  it("a refused payout moved nothing, is not shown, and the same request succeeds once funds are there", async () => {
    // Proves the refusal leaves no payout and no movement, and a retry with the same reference_id is not a duplicate.
    const pid = await newParticipant(api, key);
    const body = { participant_id: pid, amount: 500, reference_id: `later_${pid}` };
    expect((await api("POST", "/v1/payouts", key, body)).body["error_code"]).toBe("insufficient_balance");
    expect((await api("GET", `/v1/payouts?participant_id=${pid}`, key)).body["total"]).toBe(0);
    await fund(api, key, pid, 500);
    const r = await api("POST", "/v1/payouts", key, body);
    expect(r.status).toBe(201);
    expect(payoutOf(r)).toMatchObject({ status: "paid", new_balance_cents: 0 });
  });
});

describe("concurrency", () => {
  it("50 parallel payouts against a balance that funds 25: exactly 25 succeed and the balance ends at 0", { timeout: 60_000 }, async () => {
    // Proves the balance check happens under the wallet's lock: no overdraft, no lost payout, each success moved 100 once.
    const pid = await newParticipant(api, key);
    await fund(api, key, pid, 2500);
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) => api("POST", "/v1/payouts", key, { participant_id: pid, amount: 100, reference_id: `par_${pid}_${i}` })),
    );
    const ok = results.filter((r) => r.status === 201);
    const refused = results.filter((r) => r.status === 422);
    expect(ok).toHaveLength(25);
    expect(refused).toHaveLength(25);
    for (const r of refused) expect(r.body["error_code"]).toBe("insufficient_balance");
    expect(await creatorWallet(api, key, pid)).toMatchObject({ balance: 0, available_balance: 0 });
    expect((await api("GET", `/v1/payouts?participant_id=${pid}&limit=100`, key)).body["total"]).toBe(25);
    const [moved] = await p.env.adminSql<{ n: string; total: string }[]>`
      select count(*)::text as n, coalesce(sum(amount), 0)::text as total from ledger.transactions where kind = 'payout' and reference_id = any(${ok.map((r) => `payout:${payoutOf(r).id}`)})`;
    expect(moved).toEqual({ n: "25", total: "2500" });
  });
});

describe("scopes and the sandbox webhook test", () => {
  it("payouts and bank accounts need the payouts scope", async () => {
    // Proves fail-closed scopes on the new operations (403 before the service runs).
    const readOnly = (await p.s.key({ scopes: ["read"] })).api_key;
    expect((await api("POST", "/v1/payouts", readOnly, { participant_id: "x", amount: 1, reference_id: "r" })).body["error_code"]).toBe("insufficient_scope");
    expect((await api("PUT", "/v1/participants/x/bank-account", readOnly, BANK_ACCOUNT)).body["error_code"]).toBe("insufficient_scope");
    expect((await api("GET", "/v1/payouts", readOnly)).status).toBe(200);
  });

  it("sends payout.failed without moving money", async () => {
    // Proves the sandbox test event of the spec: an event is queued, no ledger transaction is written.
    const before = await ledgerTransactions();
    const r = await api("POST", "/v1/sandbox/webhooks/test", key, { event_type: "payout.failed" });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ event_type: "payout.failed" });
    expect(await ledgerTransactions()).toBe(before);
  });
});

describe("bad input", () => {
  it("every field of every payout operation answers the envelope with a precise error_code and moves no money", { timeout: 60_000 }, async () => {
    // Proves 4xx envelopes (never 5xx) for each bad field, and that no ledger transaction or payout came of them.
    const pid = await newParticipant(api, key);
    await fund(api, key, pid, 10_000);
    const consumer = await api("POST", "/v1/wallets", key, { owner_id: `buyer_${pid}`, wallet_type: "consumer_credit" });
    const consumerWalletId = (consumer.body["wallet"] as { id: string }).id;
    const otherPid = await newParticipant(api, key);
    const otherWallet = await creatorWallet(api, key, otherPid);
    const txBefore = await ledgerTransactions();
    const [pBefore] = await p.env.adminSql<{ n: string }[]>`select count(*)::text as n from payouts.payouts where status <> 'refused'`;
    const base = { participant_id: pid, amount: 100, reference_id: "bad_input" };
    const cases: Array<[string, string, string, unknown, number, string]> = [
      // [what, method, path, body, status, error_code]
      ["payout: amount missing", "POST", "/v1/payouts", { participant_id: pid, reference_id: "r" }, 400, "validation_error"],
      ["payout: amount zero", "POST", "/v1/payouts", { ...base, amount: 0 }, 400, "validation_error"],
      ["payout: amount negative", "POST", "/v1/payouts", { ...base, amount: -5 }, 400, "validation_error"],
      ["payout: amount fractional", "POST", "/v1/payouts", { ...base, amount: 1.5 }, 400, "validation_error"],
      ["payout: amount a string", "POST", "/v1/payouts", { ...base, amount: "100" }, 400, "validation_error"],
      ["payout: amount too large", "POST", "/v1/payouts", { ...base, amount: 100_000_000_001 }, 400, "amount_too_large"],
      ["payout: reference_id missing", "POST", "/v1/payouts", { participant_id: pid, amount: 100 }, 400, "validation_error"],
      ["payout: reference_id empty", "POST", "/v1/payouts", { ...base, reference_id: "" }, 400, "validation_error"],
      ["payout: reference_id too long", "POST", "/v1/payouts", { ...base, reference_id: "x".repeat(256) }, 400, "validation_error"],
      ["payout: no participant or wallet", "POST", "/v1/payouts", { amount: 100, reference_id: "r" }, 400, "validation_error"],
      ["payout: participant_id malformed", "POST", "/v1/payouts", { ...base, participant_id: "bad id!" }, 400, "validation_error"],
      ["payout: participant unknown", "POST", "/v1/payouts", { ...base, participant_id: "nobody_at_all" }, 404, "participant_not_found"],
      ["payout: wallet_id not a uuid", "POST", "/v1/payouts", { ...base, wallet_id: "w1" }, 400, "validation_error"],
      [
        "payout: wallet unknown",
        "POST",
        "/v1/payouts",
        { amount: 100, reference_id: "r", wallet_id: "8b7f6c1e-2d3a-4b5c-9d8e-7f6a5b4c3d2e" },
        404,
        "wallet_not_found",
      ],
      ["payout: consumer wallet", "POST", "/v1/payouts", { amount: 100, reference_id: "r", wallet_id: consumerWalletId }, 400, "wallet_payout_not_supported"],
      ["payout: wallet of another participant", "POST", "/v1/payouts", { ...base, wallet_id: otherWallet.id }, 400, "participant_wallet_mismatch"],
      ["payout: fees negative", "POST", "/v1/payouts", { ...base, fees: -1 }, 400, "validation_error"],
      ["payout: fees fractional", "POST", "/v1/payouts", { ...base, fees: 0.5 }, 400, "validation_error"],
      ["payout: fees equal amount", "POST", "/v1/payouts", { ...base, fees: 100 }, 400, "fees_exceed_amount"],
      ["payout: fees above amount", "POST", "/v1/payouts", { ...base, fees: 500, fees_paid_by: "platform" }, 400, "fees_exceed_amount"],
      ["payout: fees_paid_by unknown", "POST", "/v1/payouts", { ...base, fees_paid_by: "buyer" }, 400, "validation_error"],
      ["payout: reference_type too long", "POST", "/v1/payouts", { ...base, reference_type: "x".repeat(65) }, 400, "validation_error"],
      ["payout: description too long", "POST", "/v1/payouts", { ...base, description: "x".repeat(1001) }, 400, "validation_error"],
      ["payout: payout_method not a string", "POST", "/v1/payouts", { ...base, payout_method: 7 }, 400, "validation_error"],
      ["payout: metadata not an object", "POST", "/v1/payouts", { ...base, metadata: "x" }, 400, "validation_error"],
      ["payout: body an array", "POST", "/v1/payouts", [base], 400, "validation_error"],
      ["payout: over the balance", "POST", "/v1/payouts", { ...base, amount: 10_001 }, 422, "insufficient_balance"],
      ["get: unknown id", "GET", "/v1/payouts/po_doesnotexist", undefined, 404, "payout_not_found"],
      ["get: malformed id", "GET", "/v1/payouts/nonsense", undefined, 404, "payout_not_found"],
      ["list: limit zero", "GET", "/v1/payouts?limit=0", undefined, 400, "invalid_limit"],
      ["list: limit too high", "GET", "/v1/payouts?limit=101", undefined, 400, "invalid_limit"],
      ["list: limit not a number", "GET", "/v1/payouts?limit=ten", undefined, 400, "validation_error"],
      ["list: offset negative", "GET", "/v1/payouts?offset=-1", undefined, 400, "invalid_limit"],
      ["list: status unknown", "GET", "/v1/payouts?status=lost", undefined, 400, "validation_error"],
      ["list: participant malformed", "GET", "/v1/payouts?participant_id=bad%20id", undefined, 400, "validation_error"],
      ["eligibility: participant unknown", "GET", "/v1/participants/nobody_here/payout-eligibility", undefined, 404, "participant_not_found"],
      ["bank: holder missing", "PUT", `/v1/participants/${pid}/bank-account`, { ...BANK_ACCOUNT, account_holder_name: undefined }, 400, "validation_error"],
      ["bank: holder blank", "PUT", `/v1/participants/${pid}/bank-account`, { ...BANK_ACCOUNT, account_holder_name: "   " }, 400, "validation_error"],
      [
        "bank: holder too long",
        "PUT",
        `/v1/participants/${pid}/bank-account`,
        { ...BANK_ACCOUNT, account_holder_name: "x".repeat(101) },
        400,
        "validation_error",
      ],
      [
        "bank: holder control chars",
        "PUT",
        `/v1/participants/${pid}/bank-account`,
        { ...BANK_ACCOUNT, account_holder_name: "Ada\nLovelace" },
        400,
        "validation_error",
      ],
      ["bank: routing missing", "PUT", `/v1/participants/${pid}/bank-account`, { ...BANK_ACCOUNT, routing_number: undefined }, 400, "validation_error"],
      [
        "bank: routing checksum",
        "PUT",
        `/v1/participants/${pid}/bank-account`,
        { ...BANK_ACCOUNT, routing_number: "011000016" },
        400,
        "invalid_routing_number",
      ],
      ["bank: routing short", "PUT", `/v1/participants/${pid}/bank-account`, { ...BANK_ACCOUNT, routing_number: "12345" }, 400, "invalid_routing_number"],
      ["bank: routing a number", "PUT", `/v1/participants/${pid}/bank-account`, { ...BANK_ACCOUNT, routing_number: 11000015 }, 400, "validation_error"],
      ["bank: account missing", "PUT", `/v1/participants/${pid}/bank-account`, { ...BANK_ACCOUNT, account_number: undefined }, 400, "validation_error"],
      ["bank: account letters", "PUT", `/v1/participants/${pid}/bank-account`, { ...BANK_ACCOUNT, account_number: "12ab5678" }, 400, "validation_error"],
      ["bank: account too short", "PUT", `/v1/participants/${pid}/bank-account`, { ...BANK_ACCOUNT, account_number: "123" }, 400, "validation_error"],
      ["bank: account too long", "PUT", `/v1/participants/${pid}/bank-account`, { ...BANK_ACCOUNT, account_number: "1".repeat(18) }, 400, "validation_error"],
      ["bank: type unknown", "PUT", `/v1/participants/${pid}/bank-account`, { ...BANK_ACCOUNT, account_type: "brokerage" }, 400, "validation_error"],
      ["bank: participant unknown", "PUT", `/v1/participants/nobody_here/bank-account`, BANK_ACCOUNT, 404, "participant_not_found"],
      ["bank: participant malformed", "PUT", `/v1/participants/bad%24id/bank-account`, BANK_ACCOUNT, 400, "validation_error"],
      ["bank: POST is not the method", "POST", `/v1/participants/${pid}/bank-account`, BANK_ACCOUNT, 405, "method_not_allowed"],
    ];
    for (const [what, method, path, body, status, code] of cases) {
      const r = await api(method, path, key, body);
      expect({ what, status: r.status, code: r.body["error_code"], success: r.body["success"] }).toEqual({ what, status, code, success: false });
      expect(typeof r.body["error"]).toBe("string");
      expect(String(r.body["request_id"])).toMatch(/^req_/);
    }
    const raw = await fetch(`${p.s.baseUrl}/v1/payouts`, {
      method: "POST",
      headers: { "x-api-key": key, "content-type": "application/json" },
      body: "{not json",
    });
    expect(raw.status).toBe(400);
    expect(((await raw.json()) as Record<string, unknown>)["error_code"]).toBe("invalid_json");
    expect(await ledgerTransactions()).toBe(txBefore);
    const [pAfter] = await p.env.adminSql<{ n: string }[]>`select count(*)::text as n from payouts.payouts where status <> 'refused'`;
    expect(pAfter?.n).toBe(pBefore?.n);
    expect((await creatorWallet(api, key, pid)).balance).toBe(10_000);
  });
});
