// Proves the first-party client against the whole system, using nothing but the client: the typical sandbox flow
// (participant, checkout completed, buyer wallet top-up, hold and release, refund, payout, receipt and its proof,
// paged entries), typed errors from real answers, and retries after a forced 504 whose first attempt did the
// work (a sandbox completion, a refund, a payout): each retry carries the same replay key, gets the first outcome,
// and the money moves once.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateKeyRingEntry } from "@treasury/service-kit";
import { createClient, TreasuryError, type TreasuryClient } from "../../libs/client/src/index.ts";
import { startStack, type Stack } from "./stack.ts";

type Body = Record<string, unknown>;
let s: Stack;
let client: TreasuryClient;
let viaProxy: TreasuryClient;
let proxy: http.Server;
const proxied: { method: string; path: string; idempotencyKey: unknown; referenceId: unknown; forced504: boolean }[] = [];
/** Requests ("POST /v1/refunds") whose next attempt is done by the server and then answered 504 to the client. */
const force504 = new Set<string>();

/**
 * A loopback stand-in for a network that loses answers: it forwards every request to the gateway and, for a request
 * named in `force504`, waits for the gateway's answer (so the work is done) and tells the client 504
 * `service_timeout` instead, as the gateway does when a service answers too late.
 */
function startProxy(target: string): Promise<string> {
  proxy = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      void (async () => {
        const body = chunks.length > 0 ? Buffer.concat(chunks).toString("utf8") : undefined;
        const headers = Object.fromEntries(Object.entries(req.headers).filter(([k]) => !["host", "connection", "content-length"].includes(k))) as Record<
          string,
          string
        >;
        const answer = await fetch(target + req.url, { method: req.method ?? "GET", headers, body: body ?? null });
        const text = await answer.text();
        const name = `${req.method} ${req.url}`;
        const parsed = body === undefined ? {} : (JSON.parse(body) as Body);
        const forced = force504.delete(name);
        proxied.push({
          method: req.method ?? "",
          path: req.url ?? "",
          idempotencyKey: parsed["idempotency_key"],
          referenceId: parsed["reference_id"],
          forced504: forced,
        });
        if (forced) {
          res.writeHead(504, { "content-type": "application/json", "retry-after": "1" });
          res.end(
            JSON.stringify({ success: false, error: "Service did not answer in time", error_code: "service_timeout", request_id: "req_proxy", retry_after: 1 }),
          );
          return;
        }
        res.writeHead(answer.status, { "content-type": answer.headers.get("content-type") ?? "application/json" });
        res.end(text);
      })();
    });
  });
  return new Promise((resolve) => proxy.listen(0, "127.0.0.1", () => resolve(`http://127.0.0.1:${(proxy.address() as AddressInfo).port}`)));
}

beforeAll(async () => {
  s = await startStack({
    services: ["ledger", "payments", "payouts", "refunds", "receipts"],
    serviceEnv: { receipts: { RECEIPTS_SEALING_KEYS: generateKeyRingEntry("cf1") } },
  });
  client = createClient({ apiKey: s.testKey, baseUrl: s.baseUrl });
  viaProxy = createClient({ apiKey: s.testKey, baseUrl: await startProxy(s.baseUrl) });
}, 120_000);
afterAll(async () => {
  proxy?.closeAllConnections();
  await new Promise((r) => proxy?.close(r));
  await s?.stop();
});

const suffix = Date.now().toString(36);

async function balanceOf(participantId: string): Promise<number> {
  const { participant } = await client.participants.get<{ participant: Body }>(participantId);
  return Number(participant["ledger_balance_cents"]);
}

describe("the typical flow, through the client", () => {
  const creator = `cf_creator_${suffix}`;
  let checkoutId = "";

  it("creates a participant and completes a sandbox checkout", async () => {
    // Only the services this flow needs run, so the health check names the others down.
    expect(await client.health.check()).toMatchObject({ data: { services: { ledger: "ok", payments: "ok", payouts: "ok" } } });
    const created = await client.participants.create({ participant_id: creator, display_name: "Ada", default_split_percent: 80 });
    expect(created).toMatchObject({ success: true, participant: { id: creator, name: "Ada" } });
    // The same create again is a replay, not a second participant.
    expect(await client.participants.create({ participant_id: creator, display_name: "Ada", default_split_percent: 80 })).toMatchObject({
      participant: { created: false },
    });

    const { checkout_session: cs } = await client.checkouts.create<{ checkout_session: Body }>({ participant_id: creator, amount: 2_500 });
    checkoutId = String(cs["id"]);
    // The completion's answer is lost: the retry carries the key the client made for the call and gets the first
    // outcome, and the sale is credited once.
    force504.add(`POST /v1/sandbox/checkouts/${checkoutId}/complete`);
    const done = await viaProxy.sandbox.completeCheckout(checkoutId);
    expect(done).toMatchObject({ idempotent: true, checkout_session: { status: "completed", creator_id: creator } });
    const attempts = proxied.filter((r) => r.path.endsWith(`${checkoutId}/complete`));
    expect(attempts.map((a) => a.forced504)).toEqual([true, false]);
    expect(attempts[0]!.idempotencyKey).toMatch(/^idk_[0-9a-f]{32}$/);
    expect(attempts[1]!.idempotencyKey).toBe(attempts[0]!.idempotencyKey);
    expect(await balanceOf(creator)).toBe(2_000);
  });

  it("tops up a buyer's wallet, holds part of the creator's balance and releases it", async () => {
    const { wallet } = await client.wallets.create<{ wallet: Body }>({ owner_id: `cf_buyer_${suffix}` });
    const topup = await client.wallets.topUp(String(wallet["id"]), { amount: 1_200, reference_id: `cf_topup_${suffix}` });
    expect(topup).toMatchObject({ topup: { amount: 1_200, balance: 1_200 } });

    const { hold } = await client.holds.create<{ hold: Body }>({ participant_id: creator, amount: 300, reference_id: `cf_hold_${suffix}` });
    const holdId = String(hold["id"] ?? hold["hold_id"]);
    const held = [];
    for await (const h of client.holds.list.all<Body>({ participant_id: creator, limit: 1 })) held.push(h);
    expect(held.map((h) => h["id"] ?? h["hold_id"])).toContain(holdId);
    await client.holds.release(holdId);
    // A release of a released hold names the earlier release.
    const again = await client.holds.release(holdId).catch((e: unknown) => e);
    expect(again).toBeInstanceOf(TreasuryError);
    expect((again as TreasuryError).code).toBe("hold_already_released");
  });

  it("refunds once although the first answer is lost: the same request derives the same key on the server", async () => {
    force504.add("POST /v1/refunds");
    const refund = await viaProxy.refunds.create({ original_sale_reference: `checkout:${checkoutId}`, amount: 500, reason: "damaged" });
    expect(refund).toMatchObject({ success: true, idempotent: true, refund: { refunded_amount_cents: 500 } });
    const attempts = proxied.filter((r) => r.path === "/v1/refunds" && r.method === "POST");
    expect(attempts.map((a) => [a.forced504, a.idempotencyKey])).toEqual([
      [true, undefined],
      [false, undefined],
    ]);

    const refunds = [];
    for await (const r of client.refunds.list.all<Body>({ sale_reference: `checkout:${checkoutId}` })) refunds.push(r);
    expect(refunds).toHaveLength(1);
    // 500 refunded, 80 % of it from the creator: 2,000 − 400.
    expect(await balanceOf(creator)).toBe(1_600);
  });

  it("pays out once although the first answer is lost: the reference_id's 409 is the first outcome", async () => {
    force504.add("POST /v1/payouts");
    const reference_id = `cf_payout_${suffix}`;
    const res = await viaProxy.payouts.create<{ payout: Body }>({ participant_id: creator, amount: 1_000, reference_id });
    expect(res).toMatchObject({ idempotent: true, payout: { reference_id, status: "paid", net_amount_cents: 1_000 } });
    const attempts = proxied.filter((r) => r.path === "/v1/payouts" && r.method === "POST");
    expect(attempts.map((a) => [a.forced504, a.referenceId])).toEqual([
      [true, reference_id],
      [false, reference_id],
    ]);

    const payouts = [];
    for await (const p of client.payouts.list.all<Body>({ participant_id: creator })) payouts.push(p);
    expect(payouts.map((p) => p["reference_id"])).toEqual([reference_id]);
    expect(await balanceOf(creator)).toBe(600);
  });

  it("issues a receipt for the sale and verifies its proof", async () => {
    const generated = await client.receipts.generate<{ receipt_id: string }>({ checkout_session_id: checkoutId });
    const got = await client.receipts.get(generated.receipt_id);
    expect(got).toMatchObject({ receipt: { id: generated.receipt_id, checkout_session_id: checkoutId } });
    const { proof } = await client.receipts.proof<{ proof: Body }>(generated.receipt_id);
    expect(proof["receipt_hash"]).toMatch(/^[0-9a-f]{64}$/);
    expect(await client.receipts.verify({ receipt_id: generated.receipt_id })).toMatchObject({ valid: true });
    const jwks = await client.receipts.jwks<{ keys: Body[] }>();
    expect(jwks.keys.length).toBeGreaterThan(0);
  });

  it("pages through the creator's wallet entries to their total", async () => {
    const { participant } = await client.participants.get<{ participant: Body }>(creator);
    const walletId = String(participant["wallet_id"]);
    const first = await client.wallets.entries<{ total: number }>(walletId, { limit: 1 });
    const entries = [];
    for await (const e of client.wallets.entries.all<Body>(walletId, { limit: 1 })) entries.push(e);
    expect(entries).toHaveLength(first.total);
    // The sale's share, the refund's part and the payout, once each (a hold moves no entry).
    expect(first.total).toBe(3);
    expect(new Set(entries.map((e) => e["entry_id"])).size).toBe(entries.length);
  });

  it("raises what the API refuses as typed errors", async () => {
    const over = await client.payouts.create({ participant_id: creator, amount: 1_000_000, reference_id: `cf_over_${suffix}` }).catch((e: unknown) => e);
    expect(over).toBeInstanceOf(TreasuryError);
    expect([(over as TreasuryError).code, (over as TreasuryError).status, (over as TreasuryError).family]).toEqual([
      "insufficient_balance",
      422,
      "unprocessable",
    ]);
    const missing = await client.participants.get("cf_nobody").catch((e: unknown) => e);
    expect(missing).toMatchObject({ code: "participant_not_found", status: 404 });
    const badKey = createClient({ apiKey: "slk_test_" + "x".repeat(32), baseUrl: s.baseUrl });
    await expect(badKey.participants.list()).rejects.toMatchObject({ code: "invalid_api_key", family: "authentication" });
  });
});
