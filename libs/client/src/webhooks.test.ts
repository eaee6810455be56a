// Proves webhook verification: a Standard Webhooks v1 (HMAC) delivery made by the reference implementation and a
// v1a (Ed25519) delivery signed with node:crypto verify; a tampered body, a wrong key or secret, and a stale
// timestamp are refused; keys come from a JWKS object or a JWKS URL, fetched again once for a rotated key.
import { generateKeyPairSync, sign, type KeyObject } from "node:crypto";
import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { jwksFromUrl, verifyWebhook, WebhookVerificationError, type Ed25519Jwk } from "./webhooks.ts";

const NOW_MS = Date.parse("2026-03-01T12:00:00Z");
const now = () => NOW_MS;
const ts = String(NOW_MS / 1000);
const payload = JSON.stringify({
  id: "evt_1",
  type: "payout.executed",
  created_at: "2026-03-01T12:00:00Z",
  endpoint_id: "we_1",
  data: { payout_id: "po_1", amount_cents: 1000 },
});

function ed25519Key(kid: string): { privateKey: KeyObject; jwk: Ed25519Jwk } {
  const { privateKey, publicKey } = generateKeyPairSync("ed25519");
  const x = publicKey.export({ format: "jwk" }).x!;
  return { privateKey, jwk: { kty: "OKP", crv: "Ed25519", x, kid, use: "sig" } };
}

function v1a(privateKey: KeyObject, id: string, timestamp: string, body: string): string {
  return `v1a,${sign(null, Buffer.from(`${id}.${timestamp}.${body}`), privateKey).toString("base64")}`;
}

async function reason(p: Promise<unknown>): Promise<string> {
  const e = await p.then(
    () => undefined,
    (x: unknown) => x,
  );
  expect(e).toBeInstanceOf(WebhookVerificationError);
  return (e as WebhookVerificationError).reason;
}

describe("v1: HMAC with the endpoint's secret", () => {
  const secret = `whsec_${Buffer.from("0123456789abcdef01234567").toString("base64")}`;
  const signature = new Webhook(secret).sign("whd_1", new Date(NOW_MS), payload);
  const headers = { "webhook-id": "whd_1", "webhook-timestamp": ts, "webhook-signature": signature };

  it("verifies what the Standard Webhooks reference implementation signs", async () => {
    const event = await verifyWebhook({ payload, headers: new Headers(headers), secret, now });
    expect(event).toMatchObject({ id: "evt_1", type: "payout.executed", data: { payout_id: "po_1" } });
  });

  it("accepts either secret during a rotation, and either of two signatures", async () => {
    const other = `whsec_${Buffer.from("another secret of 24 by").toString("base64")}`;
    await expect(verifyWebhook({ payload, headers, secret: [other, secret], now })).resolves.toBeTruthy();
    const both = { ...headers, "webhook-signature": `${new Webhook(other).sign("whd_1", new Date(NOW_MS), payload)} ${signature}` };
    await expect(verifyWebhook({ payload, headers: both, secret, now })).resolves.toBeTruthy();
  });

  it("refuses a tampered body, a wrong secret, a stale or future timestamp and missing headers", async () => {
    expect(await reason(verifyWebhook({ payload: payload.replace("1000", "9000"), headers, secret, now }))).toBe("no_verifying_signature");
    expect(await reason(verifyWebhook({ payload, headers, secret: `whsec_${Buffer.from("x".repeat(24)).toString("base64")}`, now }))).toBe(
      "no_verifying_signature",
    );
    expect(await reason(verifyWebhook({ payload, headers, secret, now: () => NOW_MS + 301_000 }))).toBe("timestamp_out_of_tolerance");
    expect(await reason(verifyWebhook({ payload, headers, secret, now: () => NOW_MS - 301_000 }))).toBe("timestamp_out_of_tolerance");
    expect(await reason(verifyWebhook({ payload, headers: { "webhook-id": "whd_1" }, secret, now }))).toBe("missing_headers");
  });
});

describe("v1a: Ed25519 with the published keys", () => {
  const current = ed25519Key("whk_2");
  const old = ed25519Key("whk_1");
  const headersFor = (sig: string) => ({ "webhook-id": "whd_9", "webhook-timestamp": ts, "webhook-signature": sig });

  it("verifies with a JWKS object listing the signing key beside another", async () => {
    const headers = headersFor(v1a(current.privateKey, "whd_9", ts, payload));
    const event = await verifyWebhook({ payload, headers, endpointId: "we_1", jwks: { keys: [old.jwk, current.jwk] }, now });
    expect(event.id).toBe("evt_1");
  });

  it("refuses a delivery signed for another endpoint, and a JWKS without the endpoint to check", async () => {
    const headers = headersFor(v1a(current.privateKey, "whd_9", ts, payload));
    expect(await reason(verifyWebhook({ payload, headers, endpointId: "we_2", jwks: { keys: [current.jwk] }, now }))).toBe("other_endpoint");
    await expect(verifyWebhook({ payload, headers, jwks: { keys: [current.jwk] }, now })).rejects.toBeInstanceOf(TypeError);
  });

  it("refuses a tampered body, a key not in the JWKS, a v1 signature it has no secret for, and a stale timestamp", async () => {
    const headers = headersFor(v1a(current.privateKey, "whd_9", ts, payload));
    expect(await reason(verifyWebhook({ payload: payload.replace("po_1", "po_2"), headers, endpointId: "we_1", jwks: { keys: [current.jwk] }, now }))).toBe(
      "no_verifying_signature",
    );
    expect(await reason(verifyWebhook({ payload, headers, endpointId: "we_1", jwks: { keys: [old.jwk] }, now }))).toBe("no_verifying_signature");
    const hmacOnly = headersFor(new Webhook(`whsec_${Buffer.from("y".repeat(24)).toString("base64")}`).sign("whd_9", new Date(NOW_MS), payload));
    expect(await reason(verifyWebhook({ payload, headers: hmacOnly, endpointId: "we_1", jwks: { keys: [current.jwk] }, now }))).toBe("no_verifying_signature");
    expect(await reason(verifyWebhook({ payload, headers, endpointId: "we_1", jwks: { keys: [current.jwk] }, now: () => NOW_MS + 600_000 }))).toBe(
      "timestamp_out_of_tolerance",
    );
  });

  it("fetches the JWKS from its URL, caches it, and fetches again once for a key it has not seen", async () => {
    let published = [old.jwk];
    const urls: string[] = [];
    const fetchJwks = (async (url: string | URL | Request) => {
      urls.push(String(url));
      return Response.json({ keys: published });
    }) as typeof fetch;
    let clock = NOW_MS;
    const jwks = jwksFromUrl("http://api.test/v1/webhooks/jwks", { fetch: fetchJwks, now: () => clock });

    await verifyWebhook({ payload, headers: headersFor(v1a(old.privateKey, "whd_9", ts, payload)), endpointId: "we_1", jwks, now });
    await verifyWebhook({ payload, headers: headersFor(v1a(old.privateKey, "whd_9", ts, payload)), endpointId: "we_1", jwks, now });
    expect(urls).toEqual(["http://api.test/v1/webhooks/jwks"]);

    // Rotation: the new key is published; a delivery signed with it verifies after one fetch more.
    published = [old.jwk, current.jwk];
    clock += 60_000;
    await verifyWebhook({ payload, headers: headersFor(v1a(current.privateKey, "whd_9", ts, payload)), endpointId: "we_1", jwks, now });
    expect(urls).toHaveLength(2);

    // A forged signature right after does not make it fetch again (refreshes are spaced).
    const forged = headersFor(v1a(ed25519Key("x").privateKey, "whd_9", ts, payload));
    expect(await reason(verifyWebhook({ payload, headers: forged, endpointId: "we_1", jwks, now }))).toBe("no_verifying_signature");
    expect(urls).toHaveLength(2);
  });
});
