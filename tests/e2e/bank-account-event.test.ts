// Proves that setting a payout bank account needs the payouts scope (a creators-only key is refused before the
// service runs) and that each set or change emits `bank_account.updated`, delivered to a webhook endpoint signed
// (verified with the Standard Webhooks library), its data the account as the API shows it: last four digits only.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Webhook } from "standardwebhooks";
import { generateKeyRingEntry } from "@treasury/service-kit";
import { waitFor } from "@treasury/testing";
import { buildPayouts, type PayoutsService } from "../../services/payouts/src/service.ts";
import { BANK_ACCOUNT } from "./payouts-stack.ts";
import { call, LOOPBACK_WEBHOOKS_ENV, startStack, type Stack } from "./stack.ts";

let stack: Stack;
let payouts: PayoutsService;
let server: http.Server;
const received: Array<{ headers: http.IncomingHttpHeaders; body: string }> = [];

beforeAll(async () => {
  stack = await startStack({ services: ["ledger", "webhooks"], serviceEnv: LOOPBACK_WEBHOOKS_ENV });
  payouts = await buildPayouts(stack.env.env("payouts", { PII_KEYS: generateKeyRingEntry("bank1") }));
  await payouts.start();
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString("utf8") });
      res.writeHead(200).end("ok");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
});
afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((r) => server?.close(r));
  await payouts?.stop();
  await stack?.stop();
});

const api = (method: string, path: string, key: string, body?: unknown) => call(stack.baseUrl, method, path, { key, ...(body !== undefined ? { body } : {}) });

async function newParticipant(): Promise<string> {
  const id = `creator_${Date.now().toString(36)}_${Math.floor(Math.random() * 1e6)}`;
  expect((await api("POST", "/v1/participants", stack.testKey, { participant_id: id, display_name: `Creator ${id}` })).status).toBe(201);
  return id;
}

interface Delivered {
  type: string;
  data: Record<string, unknown>;
}

describe("PUT /v1/participants/{id}/bank-account", () => {
  it("a key with only the creators scope is refused with 403 insufficient_scope, and nothing is stored", async () => {
    // Proves the scope moved from creators to payouts: redirecting a creator's money needs a payouts key.
    const pid = await newParticipant();
    const creatorsOnly = (await stack.key({ scopes: ["creators"] })).api_key;
    const r = await api("PUT", `/v1/participants/${pid}/bank-account`, creatorsOnly, BANK_ACCOUNT);
    expect(r.status).toBe(403);
    expect(r.body).toMatchObject({ success: false, error_code: "insufficient_scope" });
    expect((await api("GET", `/v1/participants/${pid}/bank-account`, stack.testKey)).body).toMatchObject({ error_code: "bank_account_not_found" });
  });

  it("a payouts key sets it, and every set or change delivers bank_account.updated with the masked account", async () => {
    // Proves the event end to end: outbox → stream → fan-out → a signed delivery whose data never holds the number.
    const created = await api("POST", "/v1/webhooks", stack.testKey, {
      action: "create",
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
      events: ["bank_account.updated"],
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const secret = (created.body["data"] as { secret: string }).secret;
    const pid = await newParticipant();
    const payoutsOnly = (await stack.key({ scopes: ["payouts"] })).api_key;

    const put = await api("PUT", `/v1/participants/${pid}/bank-account`, payoutsOnly, BANK_ACCOUNT);
    expect(put.status, JSON.stringify(put.body)).toBe(201);
    const changed = await api("PUT", `/v1/participants/${pid}/bank-account`, payoutsOnly, {
      ...BANK_ACCOUNT,
      account_number: "55554444",
      account_type: "savings",
    });
    expect(changed.status).toBe(200);

    const mine = (): Delivered[] =>
      received.map((r) => JSON.parse(r.body) as Delivered).filter((e) => e.type === "bank_account.updated" && e.data["participant_id"] === pid);
    await waitFor(() => mine().length >= 2, { timeoutMs: 15_000 });
    for (const r of received) {
      const headers = {
        "webhook-id": String(r.headers["webhook-id"]),
        "webhook-timestamp": String(r.headers["webhook-timestamp"]),
        "webhook-signature": String(r.headers["webhook-signature"]),
      };
      expect(new Webhook(secret).verify(r.body, headers)).toMatchObject({ type: "bank_account.updated" });
      expect(r.body).not.toContain("000123456789");
      expect(r.body).not.toContain("55554444");
    }
    const lastFours = mine()
      .map((e) => e.data["last4"])
      .sort();
    expect(lastFours).toEqual(["4444", "6789"]);
    const last = mine().find((e) => e.data["last4"] === "4444");
    expect(last?.data).toEqual(changed.body["bank_account"]);
    // The stored event is masked too.
    const [outbox] = await stack.env.adminSql<{ all: string }[]>`
      select coalesce(string_agg(payload::text, ' '), '') as all from payouts.outbox where type = 'bank_account.updated'`;
    expect(outbox?.all).toContain(pid);
    expect(outbox?.all).not.toContain("000123456789");
  });
});
