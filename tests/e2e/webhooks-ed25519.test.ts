// Proves Ed25519 webhook signatures end to end through the gateway: the key set at GET /v1/webhooks/jwks needs no
// API key and carries a cache header; an `ed25519` endpoint's delivery (sandbox test event → outbox → EVENTS →
// fan-out → POST) verifies with that key set fetched over HTTP and node:crypto alone, a tampered body or timestamp
// does not, and the signed body names the endpoint it is for; `admin webhooks rotate-signing-key` keeps the old key
// listed while new deliveries are signed first by the new kid; the new endpoint fields are validated.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { createPublicKey, verify, type JsonWebKey } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "@treasury/testing";
import { admin } from "./admin-run.ts";
import { call, LOOPBACK_WEBHOOKS_ENV, startStack, type Stack } from "./stack.ts";

interface Jwk {
  kty: string;
  crv: string;
  x: string;
  kid: string;
  use: string;
  alg: string;
}
interface Got {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

let stack: Stack;
let server: http.Server;
const received: Got[] = [];

beforeAll(async () => {
  stack = await startStack({ services: ["webhooks"], serviceEnv: LOOPBACK_WEBHOOKS_ENV });
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      received.push({ path: req.url ?? "", headers: req.headers, body: Buffer.concat(chunks).toString("utf8") });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
});
afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((r) => server?.close(r));
  await stack?.stop();
});

const hookUrl = (path: string): string => `http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`;
const webhooks = (body: unknown) => call(stack.baseUrl, "POST", "/v1/webhooks", { key: stack.testKey, body });

/** The key set as a receiver gets it: plain HTTP, no API key. */
async function fetchJwks(): Promise<{ keys: Jwk[]; cacheControl: string | null; status: number }> {
  const res = await fetch(`${stack.baseUrl}/v1/webhooks/jwks`);
  const body = (await res.json()) as { keys: Jwk[] };
  return { keys: body.keys, cacheControl: res.headers.get("cache-control"), status: res.status };
}

/** A receiver's check with node:crypto and the key set only: some `v1a` signature verifies under some listed key. */
function verifies(keys: readonly Jwk[], got: Got): boolean {
  const message = Buffer.from(`${String(got.headers["webhook-id"])}.${String(got.headers["webhook-timestamp"])}.${got.body}`, "utf8");
  const signatures = String(got.headers["webhook-signature"])
    .split(" ")
    .filter((s) => s.startsWith("v1a,"))
    .map((s) => Buffer.from(s.slice(4), "base64"));
  return keys.some((k) => {
    const key = createPublicKey({ key: { kty: k.kty, crv: k.crv, x: k.x } as JsonWebKey, format: "jwk" });
    return signatures.some((sig) => verify(null, message, key, sig));
  });
}

/** A sandbox test event through the whole path; what each endpoint of `paths` received for it. */
async function sendTest(paths: readonly string[]): Promise<Got[]> {
  const sent = await call(stack.baseUrl, "POST", "/v1/sandbox/webhooks/test", { key: stack.testKey, body: { event_type: "payout.failed" } });
  expect(sent.status).toBe(200);
  const eventId = String(sent.body["event_id"]);
  const mine = (path: string): Got | undefined => received.find((r) => r.path === path && (JSON.parse(r.body) as { id: string }).id === eventId);
  return waitFor(() => {
    const got = paths.map(mine);
    return got.every((g) => g !== undefined) ? (got as Got[]) : false;
  });
}

describe("GET /v1/webhooks/jwks", () => {
  it("answers the public keys without an API key, with a cache header", async () => {
    const { keys, cacheControl, status } = await fetchJwks();
    expect(status).toBe(200);
    expect(cacheControl).toBe("public, max-age=300");
    expect(keys.length).toBeGreaterThanOrEqual(1);
    for (const k of keys) {
      expect(k).toEqual({ kty: "OKP", crv: "Ed25519", x: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/), kid: expect.any(String), use: "sig", alg: "EdDSA" });
      expect(k).not.toHaveProperty("d");
    }
  });
});

describe("ed25519 deliveries", () => {
  it("verify with the key set fetched over HTTP and node:crypto; tampering fails; the body names its endpoint", async () => {
    const created = await webhooks({ action: "create", url: hookUrl("/a"), signature_scheme: "ed25519", events: ["payout.failed"] });
    expect(created.status).toBe(201);
    const a = created.body["data"] as { id: string; signature_scheme: string; ordering: string };
    expect(a).toMatchObject({ signature_scheme: "ed25519", ordering: "none" });
    const b = (await webhooks({ action: "create", url: hookUrl("/b"), signature_scheme: "ed25519", events: ["payout.failed"] })).body["data"] as { id: string };

    const [atA, atB] = await sendTest(["/a", "/b"]);
    if (atA === undefined || atB === undefined) throw new Error("not delivered");
    const { keys } = await fetchJwks();
    expect(String(atA.headers["webhook-signature"])).toMatch(/^v1a,/);
    expect(String(atA.headers["webhook-signature-kid"]).split(" ")[0]).toBe(keys[0]?.kid);
    expect(verifies(keys, atA)).toBe(true);
    expect(verifies(keys, { ...atA, body: atA.body.replace('"type":"payout.failed"', '"type":"payout.executed"') })).toBe(false);
    const ts = String(Number(atA.headers["webhook-timestamp"]) - 3600);
    expect(verifies(keys, { ...atA, headers: { ...atA.headers, "webhook-timestamp": ts } })).toBe(false);
    // Both verify (the key is the platform's), so each body says whom it is for: a receiver checks its own id.
    expect(verifies(keys, atB)).toBe(true);
    expect((JSON.parse(atA.body) as { endpoint_id: string }).endpoint_id).toBe(a.id);
    expect((JSON.parse(atB.body) as { endpoint_id: string }).endpoint_id).toBe(b.id);
    for (const id of [a.id, b.id]) await webhooks({ action: "delete", endpoint_id: id });
  });

  it("rotation with the admin CLI keeps the old key listed; new deliveries are signed first by the new kid", async () => {
    const e = (await webhooks({ action: "create", url: hookUrl("/r"), signature_scheme: "ed25519", events: ["payout.failed"] })).body["data"] as { id: string };
    const before = (await fetchJwks()).keys.map((k) => k.kid);
    const done = await admin(stack.env, "webhooks", "rotate-signing-key", "--reason", "yearly rotation");
    expect(done.code, JSON.stringify(done.err)).toBe(0);
    const rotated = done.out as { kid: string; previous: Array<{ kid: string }> };
    const { keys } = await fetchJwks();
    expect(keys.map((k) => k.kid)).toEqual([rotated.kid, ...before]);

    const [got] = await sendTest(["/r"]);
    if (got === undefined) throw new Error("not delivered");
    expect(String(got.headers["webhook-signature-kid"]).split(" ")).toEqual([rotated.kid, ...before]);
    const onlyNew = { ...got, headers: { ...got.headers, "webhook-signature": String(got.headers["webhook-signature"]).split(" ")[0] } };
    expect(verifies(keys.slice(0, 1), onlyNew)).toBe(true);
    // A receiver whose cached set predates the rotation still verifies within the overlap.
    expect(verifies(keys.slice(1), got)).toBe(true);
    await webhooks({ action: "delete", endpoint_id: e.id });
  });

  it("validates signature_scheme and ordering, and shows them on every endpoint", async () => {
    const bad = await webhooks({ action: "create", url: hookUrl("/x"), signature_scheme: "rsa" });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ success: false, error_code: "validation_error" });
    const badOrder = await webhooks({ action: "create", url: hookUrl("/x"), ordering: "global" });
    expect(badOrder.status).toBe(400);
    const ok = await webhooks({ action: "create", url: hookUrl("/x"), ordering: "per_endpoint" });
    expect(ok.body["data"]).toMatchObject({ signature_scheme: "hmac_sha256", ordering: "per_endpoint" });
    const id = (ok.body["data"] as { id: string }).id;
    const updated = await webhooks({ action: "update", endpoint_id: id, ordering: "none", signature_scheme: "ed25519" });
    expect(updated.body["data"]).toMatchObject({ signature_scheme: "ed25519", ordering: "none" });
    await webhooks({ action: "delete", endpoint_id: id });
  });
});
