// Proves the client's webhook side against real deliveries: an endpoint created and a sandbox test event sent
// through the client, the delivery our webhooks service signs verified by `verifyWebhook` with the endpoint's
// secret, and the same delivery refused when its body or secret is not the one signed; an Ed25519 (`v1a`)
// delivery verified with keys fetched over HTTP from a JWKS, and refused once tampered.
import { generateKeyPairSync, sign } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "@treasury/testing";
import { createClient, jwksFromUrl, verifyWebhook, WebhookVerificationError, type TreasuryClient } from "../../libs/client/src/index.ts";
import { LOOPBACK_WEBHOOKS_ENV, startStack, type Stack } from "./stack.ts";

let s: Stack;
let client: TreasuryClient;
let receiver: http.Server;
const received: { headers: Record<string, string>; body: string }[] = [];
/** What the receiver answers to GET /jwks: a stand-in for a published key set. */
let publishedJwks: unknown = { keys: [] };
let jwksFetches = 0;

beforeAll(async () => {
  s = await startStack({ services: ["webhooks"], serviceEnv: LOOPBACK_WEBHOOKS_ENV });
  client = createClient({ apiKey: s.testKey, baseUrl: s.baseUrl });
  receiver = http.createServer((req, res) => {
    if (req.method === "GET" && req.url === "/jwks") {
      jwksFetches++;
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(publishedJwks));
      return;
    }
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      received.push({ headers: req.headers as Record<string, string>, body: Buffer.concat(chunks).toString("utf8") });
      res.writeHead(200).end("ok");
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
}, 120_000);
afterAll(async () => {
  receiver?.closeAllConnections();
  await new Promise((r) => receiver?.close(r));
  await s?.stop();
});

const receiverUrl = () => `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;

async function refusal(p: Promise<unknown>): Promise<string> {
  const e = await p.then(
    () => undefined,
    (x: unknown) => x,
  );
  expect(e).toBeInstanceOf(WebhookVerificationError);
  return (e as WebhookVerificationError).reason;
}

describe("webhook deliveries verified with the client", () => {
  it("verifies a delivery signed by the webhooks service with the endpoint's secret (v1)", async () => {
    const created = await client.webhooks.manage<{ data: { id: string; secret: string } }>({ action: "create", url: `${receiverUrl()}/hook` });
    const { secret } = created.data;
    const sent = await client.sandbox.sendTestWebhook<{ event_id: string }>({});
    const delivery = await waitFor(() => received.find((r) => (JSON.parse(r.body) as { id: string }).id === sent.event_id) ?? false);

    const event = await verifyWebhook({ payload: delivery.body, headers: delivery.headers, secret });
    expect(event).toMatchObject({ id: sent.event_id, livemode: false, mode: "sandbox" });

    expect(await refusal(verifyWebhook({ payload: delivery.body.replace(sent.event_id, "evt_other"), headers: delivery.headers, secret }))).toBe(
      "no_verifying_signature",
    );
    const otherSecret = `whsec_${Buffer.alloc(24, 7).toString("base64")}`;
    expect(await refusal(verifyWebhook({ payload: delivery.body, headers: delivery.headers, secret: otherSecret }))).toBe("no_verifying_signature");
  });

  it("verifies an Ed25519 delivery (v1a) with keys fetched from a JWKS URL, and refuses it tampered", async () => {
    const { privateKey, publicKey } = generateKeyPairSync("ed25519");
    publishedJwks = { keys: [{ ...publicKey.export({ format: "jwk" }), kid: "whk_test", use: "sig" }] };
    const body = JSON.stringify({ id: "evt_v1a", type: "sandbox.test", created_at: new Date().toISOString(), data: {} });
    const id = "whd_v1a";
    const timestamp = String(Math.floor(Date.now() / 1000));
    const headers = {
      "webhook-id": id,
      "webhook-timestamp": timestamp,
      "webhook-signature": `v1a,${sign(null, Buffer.from(`${id}.${timestamp}.${body}`), privateKey).toString("base64")}`,
    };
    const jwks = jwksFromUrl(`${receiverUrl()}/jwks`);

    await expect(verifyWebhook({ payload: body, headers, jwks })).resolves.toMatchObject({ id: "evt_v1a" });
    expect(await refusal(verifyWebhook({ payload: body.replace("sandbox.test", "payout.executed"), headers, jwks }))).toBe("no_verifying_signature");
    // The keys were fetched once and kept; the refusal did not fetch them again so soon.
    expect(jwksFetches).toBe(1);
  });
});
