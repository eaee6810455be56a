// Proves the client's webhook side against real deliveries: an endpoint created and a sandbox test event sent
// through the client, the delivery our webhooks service signs verified by `verifyWebhook` with the endpoint's
// secret, and the same delivery refused when its body or secret is not the one signed; an Ed25519 (`v1a`)
// delivery verified with the platform's keys fetched over HTTP from the gateway's JWKS, and refused once tampered
// or when it names another endpoint.
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

beforeAll(async () => {
  s = await startStack({ services: ["webhooks"], serviceEnv: LOOPBACK_WEBHOOKS_ENV });
  client = createClient({ apiKey: s.testKey, baseUrl: s.baseUrl });
  receiver = http.createServer((req, res) => {
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

  it("verifies an Ed25519 delivery (v1a) with the platform's keys fetched from GET /v1/webhooks/jwks, and refuses it tampered or for another endpoint", async () => {
    const created = await client.webhooks.manage<{ data: { id: string } }>({ action: "create", url: `${receiverUrl()}/ed25519`, signature_scheme: "ed25519" });
    const endpointId = created.data.id;
    const sent = await client.sandbox.sendTestWebhook<{ event_id: string }>({});
    const delivery = await waitFor(
      () => received.find((r) => r.headers["webhook-signature"]?.startsWith("v1a,") && (JSON.parse(r.body) as { id: string }).id === sent.event_id) ?? false,
    );
    const jwks = jwksFromUrl(`${s.baseUrl}/v1/webhooks/jwks`);

    await expect(verifyWebhook({ payload: delivery.body, headers: delivery.headers, jwks, endpointId })).resolves.toMatchObject({
      id: sent.event_id,
      endpoint_id: endpointId,
    });
    expect(await refusal(verifyWebhook({ payload: delivery.body.replace(sent.event_id, "evt_other"), headers: delivery.headers, jwks, endpointId }))).toBe(
      "no_verifying_signature",
    );
    expect(await refusal(verifyWebhook({ payload: delivery.body, headers: delivery.headers, jwks, endpointId: "we_someone_else" }))).toBe("other_endpoint");
  });
});
