// Proves refund request expiry through the gateway on the org's sandbox clock: a request nobody reviewed shows
// when it expires; advancing the clock 31 days cancels it within seconds, by the schedule with the reason
// `expired`, and delivers one signed `refund_request.cancelled` webhook saying so; approving it afterwards is 409
// invalid_state_transition; no money moved; and a live request of the same org is untouched by the sandbox
// advance. Real PostgreSQL and NATS; every service as it runs.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Webhook } from "standardwebhooks";
import { waitFor } from "@treasury/testing";
import { call, LOOPBACK_WEBHOOKS_ENV, startStack, type Stack } from "./stack.ts";

type Body = Record<string, unknown>;
const DAY = 86_400;
let s: Stack;
let server: http.Server;
let secret = "";
const received: Array<{ headers: http.IncomingHttpHeaders; body: string }> = [];

const api = (method: string, path: string, body?: unknown, key = s.testKey) => call(s.baseUrl, method, path, { key, ...(body === undefined ? {} : { body }) });

async function ok(method: string, path: string, body: unknown, status = 200, key = s.testKey): Promise<Body> {
  const r = await api(method, path, body, key);
  expect(r.status, `${method} ${path}: ${JSON.stringify(r.body)}`).toBe(status);
  return r.body;
}

beforeAll(async () => {
  s = await startStack({ services: ["ledger", "payments", "refunds", "webhooks"], serviceEnv: LOOPBACK_WEBHOOKS_ENV });
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString("utf8") });
      res.writeHead(200).end("ok");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const hook = await ok(
    "POST",
    "/v1/webhooks",
    {
      action: "create",
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
      events: ["refund_request.cancelled"],
    },
    201,
  );
  secret = String((hook["data"] as Body)["secret"]);
}, 120_000);
afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((r) => server?.close(r));
  await s?.stop();
});

/** A participant and a recorded sale of `amount` with the given key (sandbox or live): its sale reference. */
async function sale(key: string, amount: number): Promise<string> {
  const creator = `rre_${Date.now().toString(36)}_${Math.floor(Math.random() * 1e6)}`;
  await ok("POST", "/v1/participants", { participant_id: creator, default_split_percent: 80 }, 201, key);
  await ok("POST", "/v1/record-sale", { reference_id: `sale_${creator}`, creator_id: creator, amount }, 201, key);
  return `sale_${creator}`;
}

/** The refund_request.cancelled deliveries received so far, verified with the endpoint's secret. */
function cancelledDeliveries(): Body[] {
  const wh = new Webhook(secret);
  return received
    .filter((d) => d.headers["x-webhook-event"] === "refund_request.cancelled")
    .map(
      (d) =>
        wh.verify(d.body, {
          "webhook-id": String(d.headers["webhook-id"]),
          "webhook-timestamp": String(d.headers["webhook-timestamp"]),
          "webhook-signature": String(d.headers["webhook-signature"]),
        }) as Body,
    );
}

async function refundCount(): Promise<number> {
  const [r] = await s.env.adminSql<{ n: string }[]>`select count(*)::text as n from refunds.refunds`;
  return Number(r?.n);
}

describe("a refund request nobody reviews", () => {
  it("expires 30 days after it was made on the org's clock: cancelled by the schedule within seconds of the advance, with its webhook", async () => {
    const sandboxSale = await sale(s.testKey, 5_000);
    const liveSale = await sale(s.liveKey, 5_000);
    const rr = (await ok("POST", "/v1/refund-requests", { sale_reference: sandboxSale, amount: 1_000, reason: "never arrived" }, 201))[
      "refund_request"
    ] as Body;
    const live = (await ok("POST", "/v1/refund-requests", { sale_reference: liveSale, amount: 1_000 }, 201, s.liveKey))["refund_request"] as Body;
    const clock = (await ok("GET", "/v1/sandbox/clock", undefined))["clock"] as Body;
    expect(rr).toMatchObject({ status: "created", cancelled_by: null });
    // 30 days (the default) from its creation on the org's clock.
    const ttl = Date.parse(String(rr["expires_at"])) - Date.parse(String(clock["now"]));
    expect(ttl).toBeGreaterThan(30 * DAY * 1000 - 60_000);
    expect(ttl).toBeLessThanOrEqual(30 * DAY * 1000);
    const before = await refundCount();

    await ok("POST", "/v1/sandbox/clock/advance", { by_seconds: 31 * DAY });
    const expired = await waitFor(
      async () => {
        const got = (await ok("GET", `/v1/refund-requests/${String(rr["id"])}`, undefined))["refund_request"] as Body;
        return got["status"] === "cancelled" ? got : false;
      },
      { timeoutMs: 15_000 },
    );
    expect(expired).toMatchObject({ cancelled_by: "schedule", cancellation_reason: "expired", refund_id: null, expires_at: rr["expires_at"] });
    expect(Date.parse(String(expired["cancelled_at"]))).toBeGreaterThanOrEqual(Date.parse(String(rr["expires_at"])));

    const hooks = await waitFor(
      () => {
        const got = cancelledDeliveries().filter((d) => (d["data"] as Body)["id"] === rr["id"]);
        return got.length > 0 ? got : false;
      },
      { timeoutMs: 15_000 },
    );
    expect(hooks).toHaveLength(1);
    expect(hooks[0]).toMatchObject({
      type: "refund_request.cancelled",
      livemode: false,
      data: { status: "cancelled", cancelled_by: "schedule", cancellation_reason: "expired" },
    });

    const approve = await api("POST", `/v1/refund-requests/${String(rr["id"])}/approve`, {});
    expect([approve.status, approve.body["error_code"]]).toEqual([409, "invalid_state_transition"]);
    expect(await refundCount()).toBe(before);

    // The live request runs on real time: the sandbox advance left it waiting, and it can still be approved.
    expect(((await ok("GET", `/v1/refund-requests/${String(live["id"])}`, undefined, 200, s.liveKey))["refund_request"] as Body)["status"]).toBe("created");
    const approved = await ok("POST", `/v1/refund-requests/${String(live["id"])}/approve`, {}, 200, s.liveKey);
    expect((approved["refund_request"] as Body)["status"]).toBe("completed");
  });
});
