// Live wallet top-ups through the hosted wallet page, with the card processor's API played by a loopback stand-in
// (processor-live.ts): the buyer sent to the processor's checkout and the wallet credited once when it is paid,
// reports of another session, currency or environment (dropped, counted, nothing credited), and return URLs
// (https only; http on localhost in sandbox).
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { waitFor, type TestEnv } from "@treasury/testing";
import { checkoutSessionObject, processorEvent, rid, sendWebhook, signed, type ProcessorStandIn } from "./processor-stand-in.ts";
import { api, n, txCount, entriesOf, participant, dropped, outcomeOf, SECRET, useLiveProcessor } from "./processor-live.ts";
import type { Stack } from "./stack.ts";

let env: TestEnv;
let s: Stack;
let proc: ProcessorStandIn;
useLiveProcessor((live) => {
  ({ env, s, proc } = live);
});

describe("live wallet funding", () => {
  it("sends the buyer to the processor's checkout and credits the consumer wallet when it is paid", { timeout: 60_000 }, async () => {
    // Proves the hosted wallet page's live top-up: a processor checkout for the amount, its completion credits the wallet once.
    const owner = rid("buyer");
    const wallet = await api("POST", "/v1/wallets", s.liveKey, { owner_id: owner, wallet_type: "consumer_credit" });
    expect(wallet.status, JSON.stringify(wallet.body)).toBe(201);
    const walletId = String((wallet.body["wallet"] as Record<string, unknown>)["id"]);
    const session = await api("POST", "/v1/wallet-sessions", s.liveKey, { wallet_id: walletId, permissions: ["view_balance", "top_up"] });
    expect(session.status, JSON.stringify(session.body)).toBe(201);
    const wals = String((session.body["wallet_session"] as Record<string, unknown>)["id"]);
    const page = await fetch(`${s.altUrl}/v1/wallet/${wals}`);
    expect(await page.text()).toContain("Continue to payment");
    const nonce = randomUUID();
    const form = new URLSearchParams({ amount: "25.00", nonce });
    const post = () =>
      fetch(`${s.altUrl}/v1/wallet/${wals}/topup`, {
        method: "POST",
        redirect: "manual",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: form,
      });
    const first = await post();
    expect(first.status).toBe(303);
    const location = String(first.headers.get("location"));
    expect(location).toMatch(/^https:\/\/checkout\.stand-in\.test\/c\/pay\/cs_test_/);
    // A double submit of the same form goes to the same processor checkout.
    expect((await post()).headers.get("location")).toBe(location);
    const created = proc.seen.filter((r) => r.path === "/v1/checkout/sessions" && r.form.get("metadata[wallet_topup_id]") !== null);
    expect(created.length).toBeGreaterThanOrEqual(1);
    const topupId = String(created.at(-1)?.form.get("metadata[wallet_topup_id]"));
    expect(created.at(-1)?.form.get("line_items[0][price_data][unit_amount]")).toBe("2500");
    const processorSession = location.split("/").at(-1)!;

    proc.fee = 103;
    const paid = processorEvent(
      "checkout.session.completed",
      checkoutSessionObject({ processorSessionId: processorSession, reference: topupId, amount: 2_500, metadata: { wallet_topup_id: topupId } }),
    );
    await Promise.all([sendWebhook(s.baseUrl, signed(paid, SECRET)), sendWebhook(s.baseUrl, signed(paid, SECRET))]);
    await waitFor(
      async () => (await env.adminSql<{ status: string }[]>`select status from payments.wallet_topups where id = ${topupId}`)[0]?.status === "completed",
      { timeoutMs: 15_000 },
    );
    const after = await api("GET", `/v1/wallets/${walletId}`, s.liveKey);
    expect(after.body["wallet"]).toMatchObject({ balance: 2_500, available_balance: 2_500 });
    expect(await entriesOf(`wallet_topup:stripe:${processorSession}`)).toEqual([
      ["platform_cash", "debit", 2_500],
      ["consumer_credit", "credit", 2_500],
      ["processing_fees", "debit", 103],
      ["platform_cash", "credit", 103],
    ]);
  });
});

describe("live wallet funding: reports of another session", () => {
  it("credits nothing for a top-up event naming another processor session, another currency or test mode", { timeout: 60_000 }, async () => {
    // Proves a top-up completes only from its own processor session, in its currency and environment; then the right event credits it once.
    const owner = rid("buyer");
    const wallet = await api("POST", "/v1/wallets", s.liveKey, { owner_id: owner, wallet_type: "consumer_credit" });
    const walletId = String((wallet.body["wallet"] as Record<string, unknown>)["id"]);
    const session = await api("POST", "/v1/wallet-sessions", s.liveKey, { wallet_id: walletId, permissions: ["view_balance", "top_up"] });
    const wals = String((session.body["wallet_session"] as Record<string, unknown>)["id"]);
    const posted = await fetch(`${s.altUrl}/v1/wallet/${wals}/topup`, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ amount: "30.00", nonce: randomUUID() }),
    });
    expect(posted.status).toBe(303);
    const processorSession = String(posted.headers.get("location")).split("/").at(-1)!;
    const [row] = await env.adminSql<{ id: string }[]>`select id from payments.wallet_topups where processor_session_id = ${processorSession}`;
    const topupId = row!.id;
    const report = (f: { processorSessionId: string; currency?: string; livemode?: boolean }) =>
      processorEvent(
        "checkout.session.completed",
        checkoutSessionObject({ ...f, reference: topupId, amount: 3_000, metadata: { wallet_topup_id: topupId } }),
        f.livemode ?? true,
      );
    const before = { session: await dropped("session_mismatch"), currency: await dropped("currency_mismatch"), livemode: await dropped("livemode_mismatch") };
    const otherSession = rid("cs_live");
    const outcomes = [
      await outcomeOf(report({ processorSessionId: otherSession })),
      await outcomeOf(report({ processorSessionId: processorSession, currency: "eur" })),
      await outcomeOf(report({ processorSessionId: processorSession, livemode: false })),
    ];
    const topup = async () =>
      (
        await env.adminSql<
          { status: string; processor_session_id: string }[]
        >`select status, processor_session_id from payments.wallet_topups where id = ${topupId}`
      )[0];
    expect(await topup()).toEqual({ status: "pending", processor_session_id: processorSession });
    expect((await api("GET", `/v1/wallets/${walletId}`, s.liveKey)).body["wallet"]).toMatchObject({ balance: 0 });
    expect((await txCount(`wallet_topup:stripe:${otherSession}`)) + (await txCount(`wallet_topup:stripe:${processorSession}`))).toBe(0);
    expect(outcomes.map((o) => /^dropped \((\w+)\)/.exec(o)?.[1] ?? o)).toEqual(["session_mismatch", "currency_mismatch", "livemode_mismatch"]);
    expect({
      session: await dropped("session_mismatch"),
      currency: await dropped("currency_mismatch"),
      livemode: await dropped("livemode_mismatch"),
    }).toEqual({ session: before.session + 1, currency: before.currency + 1, livemode: before.livemode + 1 });

    expect(await outcomeOf(report({ processorSessionId: processorSession }))).toMatch(/completed$/);
    expect((await api("GET", `/v1/wallets/${walletId}`, s.liveKey)).body["wallet"]).toMatchObject({ balance: 3_000 });
    expect(await txCount(`wallet_topup:stripe:${processorSession}`)).toBe(1);
  });
});

describe("return URLs", () => {
  it("refuses a script, http to another host, and in live http to localhost, with 400 validation_error; accepts https, and localhost in sandbox", async () => {
    // Proves success_url / cancel_url through the gateway, for checkouts and wallet sessions, with nothing stored for a refusal.
    const livePid = await participant();
    const testPid = await participant(s.testKey);
    const owner = rid("buyer");
    const refused: [string, string, string, string, string][] = [
      [s.liveKey, "/v1/checkout-sessions", "success_url", "javascript:alert(document.cookie)", "must be an https URL (http://localhost"],
      [s.liveKey, "/v1/checkout-sessions", "cancel_url", "http://shop.example/cancel", "must be an https URL (http://localhost"],
      [s.liveKey, "/v1/checkout-sessions", "success_url", "http://localhost:3000/ok", "must be an https URL in live mode"],
      [s.testKey, "/v1/checkout-sessions", "success_url", "data:text/html,<script>alert(1)</script>", "must be an https URL (http://localhost"],
      [s.testKey, "/v1/checkout-sessions", "cancel_url", "http://shop.example/cancel", "must be an https URL (http://localhost"],
      [s.liveKey, "/v1/wallet-sessions", "success_url", "javascript:alert(1)", "must be an https URL (http://localhost"],
      [s.liveKey, "/v1/wallet-sessions", "cancel_url", "http://127.0.0.1:8080/back", "must be an https URL in live mode"],
      [s.testKey, "/v1/wallet-sessions", "cancel_url", "http://shop.example/back", "must be an https URL (http://localhost"],
    ];
    const body = (key: string, path: string, extra: Record<string, string>) =>
      path === "/v1/wallet-sessions" ? { owner_id: owner, ...extra } : { participant_id: key === s.liveKey ? livePid : testPid, amount: 1_000, ...extra };
    for (const [key, path, field, url, message] of refused) {
      const r = await api("POST", path, key, body(key, path, { [field]: url }));
      expect([r.status, r.body["error_code"]], `${path} ${url}`).toEqual([400, "validation_error"]);
      expect(String(r.body["error"]), `${path} ${url}`).toContain(`${field}: ${message}`);
    }
    const stored = await n(env.adminSql<{ n: string }[]>`
      select ((select count(*) from payments.checkout_sessions where participant_id in (${livePid}, ${testPid}))
            + (select count(*) from payments.wallet_sessions where owner_id = ${owner}))::text as n`);
    expect(stored).toBe(0);

    const accepted: [string, string, Record<string, string>][] = [
      [s.liveKey, "/v1/checkout-sessions", { success_url: "https://shop.example/ok", cancel_url: "https://shop.example:8443/cancel" }],
      [s.testKey, "/v1/checkout-sessions", { success_url: "http://localhost:3000/ok", cancel_url: "http://127.0.0.1:8080/cancel" }],
      [s.liveKey, "/v1/wallet-sessions", { success_url: "https://shop.example/done" }],
      [s.testKey, "/v1/wallet-sessions", { success_url: "http://localhost/done", cancel_url: "http://127.0.0.1:5173/back" }],
    ];
    for (const [key, path, urls] of accepted) {
      const r = await api("POST", path, key, body(key, path, urls));
      expect(r.status, `${path} ${JSON.stringify(r.body)}`).toBe(201);
    }
  });
});
