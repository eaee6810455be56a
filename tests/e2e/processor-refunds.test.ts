// Live card refunds and disputes through the gateway, with the card processor's API played by a loopback stand-in
// (processor-live.ts): refunds pending until the processor confirms them, a processor failure reversed in the
// ledger and visible on the refund and its request, sandbox refunds that never call the processor, and disputes
// (hold on open, released when won, taken back with the fee when lost); refund and dispute events of the other
// environment move nothing.
import { describe, expect, it } from "vitest";
import { waitFor, type TestEnv } from "@treasury/testing";
import { processorEvent, rid, sendWebhook, signed, type ProcessorStandIn } from "./processor-stand-in.ts";
import { api, n, txCount, entriesOf, creatorWallet, participant, liveCheckout, pay, dropped, outcomeOf, SECRET, useLiveProcessor } from "./processor-live.ts";
import type { Stack } from "./stack.ts";

let env: TestEnv;
let s: Stack;
let proc: ProcessorStandIn;
useLiveProcessor((live) => {
  ({ env, s, proc } = live);
});

describe("live card refunds", () => {
  it("keeps a card refund pending until the processor confirms it, then completes it", { timeout: 60_000 }, async () => {
    // Proves the processor is asked once per refund (our refund id as its idempotency key), pending → completed on refund.updated.
    proc.fee = 0;
    proc.refundStatus = "pending";
    const pid = await participant();
    const id = await liveCheckout(pid, 10_000);
    const { pi } = await pay(id, 10_000);
    const r = await api("POST", "/v1/refunds", s.liveKey, { original_sale_reference: `checkout:${id}`, amount: 4_000, reason: "returned" });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    const refund = r.body["refund"] as Record<string, unknown> & { id: string; processor_refund_id: string };
    expect(refund).toMatchObject({ status: "pending", processor_status: "pending" });
    const asked = proc.seen.filter((q) => q.path === "/v1/refunds" && q.method === "POST" && q.headers["idempotency-key"] === refund.id);
    expect(asked).toHaveLength(1);
    expect(asked[0]?.form.get("amount")).toBe("4000");
    expect(asked[0]?.form.get("payment_intent")).toBe(pi);
    // The ledger has already taken the refund back from the creator (80 % of 4,000).
    expect((await creatorWallet(pid)).balance).toBe(4_800);

    const done = processorEvent("refund.updated", { ...proc.refund(refund.processor_refund_id), status: "succeeded" });
    expect((await sendWebhook(s.baseUrl, signed(done, SECRET))).status).toBe(200);
    const completed = await waitFor(
      async () => {
        const g = await api("GET", `/v1/refunds/${refund.id}`, s.liveKey);
        return (g.body["refund"] as Record<string, unknown>)["status"] === "completed" ? g : false;
      },
      { timeoutMs: 15_000 },
    );
    expect(completed.body["refund"]).toMatchObject({
      refunded_amount_cents: 4_000,
      processor_status: "succeeded",
      breakdown: { from_creator_cents: 3_200, from_platform_cents: 800 },
    });
    expect(
      await n(
        env.adminSql<{ n: string }[]>`select count(*)::text as n from refunds.outbox where type = 'refund.created' and payload->'data'->>'id' = ${refund.id}`,
      ),
    ).toBe(1);
    expect((await creatorWallet(pid)).balance).toBe(4_800);
  });

  it("reverses a card refund the processor fails, and shows the failure on the refund and its request", { timeout: 60_000 }, async () => {
    // Proves the compensation: refund.failed → the ledger gives the money back to both sides → refund and request failed.
    proc.refundStatus = "pending";
    const pid = await participant();
    const id = await liveCheckout(pid, 10_000);
    await pay(id, 10_000);
    const rr = await api("POST", "/v1/refund-requests", s.liveKey, {
      sale_reference: `checkout:${id}`,
      customer_id: "buyer-1",
      reason: "never arrived",
      amount: 5_000,
    });
    expect(rr.status, JSON.stringify(rr.body)).toBe(201);
    const requestId = String((rr.body["refund_request"] as Record<string, unknown>)["id"]);
    const approved = await api("POST", `/v1/refund-requests/${requestId}/approve`, s.liveKey, { reviewed_by_actor: "ops" });
    expect(approved.status, JSON.stringify(approved.body)).toBe(200);
    expect(approved.body["refund_request"]).toMatchObject({ status: "processing" });
    const refund = approved.body["refund"] as { id: string; processor_refund_id: string; status: string };
    expect(refund.status).toBe("pending");
    expect((await creatorWallet(pid)).balance).toBe(4_000);

    const failed = processorEvent("refund.failed", {
      ...proc.refund(refund.processor_refund_id),
      status: "failed",
      failure_reason: "expired_or_canceled_card",
    });
    expect((await sendWebhook(s.baseUrl, signed(failed, SECRET))).status).toBe(200);
    const got = await waitFor(
      async () => {
        const g = await api("GET", `/v1/refunds/${refund.id}`, s.liveKey);
        return (g.body["refund"] as Record<string, unknown>)["status"] === "failed" ? g : false;
      },
      { timeoutMs: 15_000 },
    );
    expect(got.body["refund"]).toMatchObject({
      failure_code: "processor_refund_failed",
      processor_status: "failed",
      reversal_transaction_id: expect.stringMatching(/^txn_/),
    });
    expect(String((got.body["refund"] as Record<string, unknown>)["failure_reason"])).toContain("expired_or_canceled_card");
    const request = await api("GET", `/v1/refund-requests/${requestId}`, s.liveKey);
    expect(request.body["refund_request"]).toMatchObject({ status: "failed" });
    // Both sides have their money back.
    expect((await creatorWallet(pid)).balance).toBe(8_000);
    expect(
      await n(
        env.adminSql<
          { n: string }[]
        >`select count(*)::text as n from refunds.outbox where type = 'refund_request.failed' and payload->'data'->>'id' = ${requestId}`,
      ),
    ).toBe(1);
  });

  it("never asks the processor for a sandbox refund", { timeout: 30_000 }, async () => {
    // Proves sandbox refunds complete at once without a single call to the processor.
    const before = proc.seen.filter((q) => q.path.startsWith("/v1/refunds")).length;
    const pid = await participant(s.testKey);
    const c = await api("POST", "/v1/checkout-sessions", s.testKey, { participant_id: pid, amount: 3_000 });
    const id = String((c.body["checkout_session"] as Record<string, unknown>)["id"]);
    expect((await api("POST", `/v1/sandbox/checkouts/${id}/complete`, s.testKey, {})).status).toBe(200);
    const r = await api("POST", "/v1/refunds", s.testKey, { original_sale_reference: `checkout:${id}`, reason: "test" });
    expect(r.status).toBe(201);
    expect(r.body["refund"]).toMatchObject({ status: "completed", processor_status: null, processor_refund_id: null });
    expect(proc.seen.filter((q) => q.path.startsWith("/v1/refunds")).length).toBe(before);
  });
});

describe("disputes", () => {
  const disputeObject = (f: { pi: string; amount: number; status: string; id?: string; fee?: number }) => ({
    id: f.id ?? rid("dp"),
    object: "dispute",
    amount: f.amount,
    currency: "usd",
    charge: `ch_${f.pi}`,
    payment_intent: f.pi,
    reason: "fraudulent",
    status: f.status,
    balance_transactions: f.fee === undefined ? [] : [{ id: rid("txn"), object: "balance_transaction", amount: -f.amount, fee: f.fee, type: "adjustment" }],
    livemode: true,
  });
  const disputeStatus = async (processorId: string) =>
    (
      await env.adminSql<
        { status: string; id: string; hold_id: string | null }[]
      >`select id, status, hold_id from payments.disputes where processor_dispute_id = ${processorId}`
    )[0];

  it("holds the creator's share when a dispute opens and, lost, takes the sale back from both sides with the dispute fee", { timeout: 60_000 }, async () => {
    // Proves charge.dispute.created → hold + dispute.created; charge.dispute.closed (lost) → released, refunded like a refund, fee booked, dispute.closed.
    proc.fee = 0;
    const pid = await participant();
    const id = await liveCheckout(pid, 10_000);
    const { pi } = await pay(id, 10_000);
    const opened = disputeObject({ pi, amount: 10_000, status: "needs_response", fee: 1_500 });
    expect((await sendWebhook(s.baseUrl, signed(processorEvent("charge.dispute.created", opened), SECRET))).status).toBe(200);
    const d = await waitFor(async () => ((await disputeStatus(opened.id))?.status === "open" ? disputeStatus(opened.id) : false), { timeoutMs: 15_000 });
    expect(await creatorWallet(pid)).toMatchObject({ balance: 8_000, held_amount: 8_000, available_balance: 0 });
    const holds = await api("GET", `/v1/holds?participant_id=${pid}`, s.liveKey);
    expect(JSON.stringify(holds.body)).toContain(String(d?.hold_id));

    const closed = { ...opened, status: "lost" };
    expect((await sendWebhook(s.baseUrl, signed(processorEvent("charge.dispute.closed", closed), SECRET))).status).toBe(200);
    await waitFor(async () => (await disputeStatus(opened.id))?.status === "lost", { timeoutMs: 15_000 });
    expect(await creatorWallet(pid)).toMatchObject({ balance: 0, held_amount: 0 });
    expect(await entriesOf(`dispute:${d?.id}`)).toEqual(
      expect.arrayContaining([
        ["creator_earnings", "debit", 8_000],
        ["platform_revenue", "debit", 2_000],
      ]),
    );
    expect(await entriesOf(`dispute_fee:${d?.id}`)).toEqual([
      ["processing_fees", "debit", 1_500],
      ["platform_cash", "credit", 1_500],
    ]);
    const events = await env.adminSql<{ type: string; payload: { data: Record<string, unknown> } }[]>`
      select type, payload from payments.outbox where type like 'dispute.%' and payload->'data'->>'id' = ${String(d?.id)} order by seq`;
    expect(events.map((e) => e.type)).toEqual(["dispute.created", "dispute.closed"]);
    expect(events[1]?.payload.data).toMatchObject({
      outcome: "lost",
      status: "lost",
      refund_amount_cents: 10_000,
      dispute_fee_cents: 1_500,
      sale_reference: `checkout:${id}`,
    });
    // The sale is fully taken back: nothing is left to refund.
    const refund = await api("POST", "/v1/refunds", s.liveKey, { original_sale_reference: `checkout:${id}`, reason: "after dispute" });
    expect(refund.body["error_code"]).toBe("sale_already_fully_refunded");
  });

  it("moves nothing for a test-mode refund or dispute event of a live sale, and counts them", { timeout: 60_000 }, async () => {
    // Proves refund and dispute events are held to the environment of what they name, like the session events.
    proc.fee = 0;
    proc.refundStatus = "pending";
    const pid = await participant();
    const id = await liveCheckout(pid, 10_000);
    const { pi } = await pay(id, 10_000);
    const r = await api("POST", "/v1/refunds", s.liveKey, { original_sale_reference: `checkout:${id}`, amount: 2_000, reason: "returned" });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    const refund = r.body["refund"] as { id: string; processor_refund_id: string };
    const before = await dropped("livemode_mismatch");
    const testRefund = processorEvent("refund.updated", { ...proc.refund(refund.processor_refund_id), status: "succeeded", livemode: false }, false);
    const opened = { ...disputeObject({ pi, amount: 10_000, status: "needs_response" }), livemode: false };
    const outcomes = [await outcomeOf(testRefund), await outcomeOf(processorEvent("charge.dispute.created", opened, false))];
    expect((await api("GET", `/v1/refunds/${refund.id}`, s.liveKey)).body["refund"]).toMatchObject({ status: "pending", processor_status: "pending" });
    expect(await disputeStatus(opened.id)).toBeUndefined();
    expect(await creatorWallet(pid)).toMatchObject({ balance: 8_000 - 1_600, held_amount: 0 });
    expect(
      outcomes.every((o) => o.startsWith("dropped (livemode_mismatch)")),
      outcomes.join("; "),
    ).toBe(true);
    expect(await dropped("livemode_mismatch")).toBe(before + 2);
  });

  it("releases the hold when the dispute is won, and moves nothing else", { timeout: 60_000 }, async () => {
    // Proves the won path: the creator's share becomes available again and no refund or fee is booked.
    const pid = await participant();
    const id = await liveCheckout(pid, 6_000);
    const { pi } = await pay(id, 6_000);
    const opened = disputeObject({ pi, amount: 3_000, status: "needs_response" });
    await sendWebhook(s.baseUrl, signed(processorEvent("charge.dispute.created", opened), SECRET));
    await waitFor(async () => (await disputeStatus(opened.id))?.status === "open", { timeoutMs: 15_000 });
    expect(await creatorWallet(pid)).toMatchObject({ balance: 4_800, held_amount: 2_400 });
    await sendWebhook(s.baseUrl, signed(processorEvent("charge.dispute.closed", { ...opened, status: "won" }), SECRET));
    await waitFor(async () => (await disputeStatus(opened.id))?.status === "won", { timeoutMs: 15_000 });
    expect(await creatorWallet(pid)).toMatchObject({ balance: 4_800, held_amount: 0, available_balance: 4_800 });
    const d = await disputeStatus(opened.id);
    expect(await txCount(`dispute:${d?.id}`)).toBe(1);
    expect(await txCount(`dispute_fee:${d?.id}`)).toBe(0);
  });
});
