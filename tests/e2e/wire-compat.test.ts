// Proves that what the official SDK reads is answered beside our own names (wire-decisions §7), through the
// gateway: participant `name`, wallet entry `status`, sandbox completion `creator_id` and `reference_id`, an
// idempotency_key replay's `idempotent: true`, reversal `reversal_id`, receipts/generate taking
// `checkout_session_id` and `transaction_id`, and no dollar-named field carrying cents.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateKeyRingEntry } from "@treasury/service-kit";
import { buildReceipts, type ReceiptsService } from "../../services/receipts/src/service.ts";
import { call, startStack, type Stack } from "./stack.ts";

type Body = Record<string, unknown>;
let s: Stack;
let receipts: ReceiptsService;

beforeAll(async () => {
  s = await startStack({ services: ["ledger", "payments"] });
  receipts = await buildReceipts(s.env.env("receipts", { RECEIPTS_SEALING_KEYS: generateKeyRingEntry("wc1") }));
  await receipts.start();
}, 120_000);
afterAll(async () => {
  await receipts?.stop();
  await s?.stop();
});

const api = (method: string, path: string, body?: unknown) => call(s.baseUrl, method, path, { key: s.testKey, ...(body === undefined ? {} : { body }) });

async function ok(method: string, path: string, body: unknown, status = 200): Promise<Body> {
  const r = await api(method, path, body);
  expect(r.status, `${method} ${path}: ${JSON.stringify(r.body)}`).toBe(status);
  return r.body;
}

/** Every key of `v`, at any depth. */
function keysOf(v: unknown): string[] {
  if (Array.isArray(v)) return v.flatMap(keysOf);
  if (v === null || typeof v !== "object") return [];
  return Object.entries(v).flatMap(([k, x]) => [k, ...keysOf(x)]);
}
const DOLLAR_NAMES = ["ledger_balance", "available_balance", "held_amount", "gross_amount", "creator_amount", "platform_amount"];

describe("the official SDK's names beside ours", () => {
  it("answers a typical flow with the fields the SDK reads", async () => {
    const pid = `wc_${randomBytes(4).toString("hex")}`;
    const created = await ok("POST", "/v1/participants", { participant_id: pid, display_name: "Ana's Studio", default_split_percent: 80 }, 201);
    expect(created["participant"]).toMatchObject({ display_name: "Ana's Studio", name: "Ana's Studio" });
    const participant = (await ok("GET", `/v1/participants/${pid}`, undefined))["participant"] as Body;
    expect(participant).toMatchObject({ name: "Ana's Studio" });

    const cs = (await ok("POST", "/v1/checkout-sessions", { participant_id: pid, amount: 5_000 }, 201))["checkout_session"] as Body;
    const key = `wc-${String(cs["id"])}`;
    const done = await ok("POST", `/v1/sandbox/checkouts/${String(cs["id"])}/complete`, { idempotency_key: key });
    expect(done["idempotent"]).toBeUndefined();
    expect(done["checkout_session"]).toMatchObject({ creator_id: pid, participant_id: pid, reference_id: `checkout:${String(cs["id"])}` });
    const again = await ok("POST", `/v1/sandbox/checkouts/${String(cs["id"])}/complete`, { idempotency_key: key });
    expect(again).toMatchObject({ idempotent: true, checkout_session: { status: "completed" } });
    const sale = String((done["checkout_session"] as Body)["sale_transaction_id"]);

    const entries = await ok("GET", `/v1/wallets/${String(participant["wallet_id"])}/entries`, undefined);
    expect((entries["entries"] as Body[]).length).toBeGreaterThan(0);
    for (const e of entries["entries"] as Body[]) expect(e["status"]).toBe("posted");

    // receipts/generate names the sale as the SDK does; two names for two different sales are refused.
    const receipt = await ok("POST", "/v1/receipts/generate", { checkout_session_id: cs["id"] }, 201);
    const replay = await ok("POST", "/v1/receipts/generate", { transaction_id: sale });
    expect(replay["receipt_id"]).toBe(receipt["receipt_id"]);
    const mismatch = await api("POST", "/v1/receipts/generate", { checkout_id: cs["id"], checkout_session_id: "00000000-0000-4000-8000-000000000000" });
    expect([mismatch.status, mismatch.body["error_code"]]).toEqual([400, "validation_error"]);

    const sold = await ok("POST", "/v1/record-sale", { reference_id: `wc-sale-${pid}`, creator_id: pid, amount: 1_000 }, 201);
    const reversal = await ok(
      "POST",
      "/v1/reverse-transaction",
      {
        transaction_id: sold["transaction_id"],
        reason: "test",
        idempotency_key: `wc-rev-${pid}`,
      },
      201,
    );
    expect(reversal["reversal_id"]).toBe(reversal["transaction_id"]);
    const revReplay = await api("POST", "/v1/reverse-transaction", {
      transaction_id: sold["transaction_id"],
      reason: "test",
      idempotency_key: `wc-rev-${pid}`,
    });
    expect(revReplay.body).toMatchObject({
      error_code: "duplicate_reversal_reference",
      idempotent: true,
      reversal: { reversal_id: reversal["transaction_id"] },
    });

    // Our *_cents names stay the only amounts on what the real API answers in dollars (participants, checkouts,
    // receipts, reversals); the wallet object and record-sale's breakdown keep the shapes §2 and §5 fix.
    for (const body of [created, participant, done, receipt, reversal]) {
      expect(keysOf(body).filter((k) => DOLLAR_NAMES.includes(k))).toEqual([]);
    }
  });
});
