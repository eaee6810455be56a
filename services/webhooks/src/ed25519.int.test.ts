// Proves Ed25519 signatures end to end inside the service: an `ed25519` endpoint's delivery carries a Standard
// Webhooks `v1a` signature that node:crypto verifies with the key the JWKS publishes (and nothing else: a
// tampered body, timestamp or id fails); the body names the endpoint it is for; the private key is sealed at rest;
// `webhooks rotate-signing-key` (audited) makes a new key that signs first, keeps the old one listed and signing
// for the overlap, and `--overlap-hours 0` drops it; switching an endpoint's scheme changes its next attempt.
import { createPublicKey, verify, type JsonWebKey } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { adminOperation, rpcSubject, type RpcReply } from "@treasury/contracts";
import { rpcCall } from "@treasury/service-kit";
import { waitFor } from "@treasury/testing";
import { authFor, newOrg, Receiver, startWebhooks, type Created, type Harness, type Received } from "./test-support.ts";

const ACTOR = "ops:carol";
const RPC_TIMEOUT_TEST_MS = 20_000;

interface Jwk {
  kty: string;
  crv: string;
  x: string;
  kid: string;
  use: string;
  alg: string;
}

let h: Harness;
let rcv: Receiver;

beforeAll(async () => {
  h = await startWebhooks();
  rcv = await Receiver.start();
});
afterAll(async () => {
  await rcv?.close();
  await h?.close();
});

async function jwks(): Promise<Jwk[]> {
  const r = await h.call("getWebhookJwks", { org_id: "", livemode: false, key_id: "", scopes: [], request_id: "req_jwks" });
  if (!r.ok) throw new Error(`jwks failed: ${r.error.code}`);
  return (r.body as { keys: Jwk[] }).keys;
}

async function rotate(flags: Record<string, string>, reason: string | null = "scheduled rotation"): Promise<RpcReply> {
  return rpcCall(
    await h.env.nats(),
    rpcSubject(h.env.prefix, "webhooks", adminOperation("webhooks rotate-signing-key")),
    { actor: ACTOR, flags, positionals: [], ...(reason === null ? {} : { reason }) },
    { timeoutMs: RPC_TIMEOUT_TEST_MS },
  );
}

/** Standard Webhooks `v1a` verification with node:crypto alone: some signature by some key of `keys` verifies. */
function verifiesWith(keys: readonly Jwk[], got: Pick<Received, "headers" | "body">): boolean {
  const id = String(got.headers["webhook-id"]);
  const ts = String(got.headers["webhook-timestamp"]);
  const message = Buffer.from(`${id}.${ts}.${got.body}`, "utf8");
  const signatures = String(got.headers["webhook-signature"])
    .split(" ")
    .filter((s) => s.startsWith("v1a,"))
    .map((s) => Buffer.from(s.slice(4), "base64"));
  return keys.some((k) => {
    const key = createPublicKey({ key: { kty: k.kty, crv: k.crv, x: k.x } as JsonWebKey, format: "jwk" });
    return signatures.some((sig) => verify(null, message, key, sig));
  });
}

/** One event to an endpoint, and what the receiver got for it. */
async function deliverOne(auth: ReturnType<typeof authFor>): Promise<Received> {
  const evt = await h.publish({ type: "payout.executed", org_id: auth.org_id, data: { payout_id: "po_1", amount_cents: 500 } });
  const [got] = await waitFor(() => (rcv.byEvent(evt.id).length > 0 ? rcv.byEvent(evt.id) : false));
  if (got === undefined) throw new Error("nothing received");
  return got;
}

describe("ed25519 signatures", () => {
  it("a delivery verifies with the published key set and node:crypto; tampering with body, timestamp or id fails", async () => {
    const auth = authFor(newOrg());
    const e = await h.manage<Created>(auth, { action: "create", url: rcv.url, signature_scheme: "ed25519" });
    expect(e).toMatchObject({ signature_scheme: "ed25519", ordering: "none" });
    const got = await deliverOne(auth);
    const keys = await jwks();
    expect(keys.length).toBeGreaterThanOrEqual(1);
    for (const k of keys) expect(Object.keys(k).sort()).toEqual(["alg", "crv", "kid", "kty", "use", "x"]);
    expect(keys[0]).toMatchObject({ kty: "OKP", crv: "Ed25519", use: "sig", alg: "EdDSA" });

    expect(String(got.headers["webhook-signature"])).toMatch(/^v1a,[A-Za-z0-9+/]{86}==( v1a,[A-Za-z0-9+/]{86}==)*$/);
    expect(String(got.headers["webhook-signature-kid"]).split(" ")[0]).toBe(keys[0]?.kid);
    expect(got.headers["webhook-id"]).toMatch(/^whd_/);
    expect(verifiesWith(keys, got)).toBe(true);
    // The signature is the platform's, so the signed body says whom it is for.
    expect(JSON.parse(got.body)).toMatchObject({ type: "payout.executed", endpoint_id: e.id });

    expect(verifiesWith(keys, { ...got, body: got.body.replace('"amount_cents":500', '"amount_cents":501') })).toBe(false);
    const later = String(Number(got.headers["webhook-timestamp"]) + 1);
    expect(verifiesWith(keys, { ...got, headers: { ...got.headers, "webhook-timestamp": later } })).toBe(false);
    expect(verifiesWith(keys, { ...got, headers: { ...got.headers, "webhook-id": "whd_other" } })).toBe(false);
    // No HMAC signature rides along: the endpoint's secret signs nothing while its scheme is ed25519.
    expect(String(got.headers["webhook-signature"])).not.toMatch(/(^| )v1,/);
  });

  it("keeps the private key sealed at rest, bound to its kid", async () => {
    const rows = await h.env.adminSql<{ kid: string; sealed_private_key: string; sealing_key_id: string; status: string }[]>`
      select kid, sealed_private_key, sealing_key_id, status from webhooks.signing_keys where status = 'active'`;
    expect(rows).toHaveLength(1);
    const [row] = rows;
    expect(row?.sealed_private_key).toMatch(new RegExp(`^v1\\.${row?.sealing_key_id}\\.`));
    expect(row?.sealed_private_key).not.toContain("MC4CAQAwBQYDK2Vw");
  });

  it("switching an endpoint's scheme changes its next attempt", async () => {
    const auth = authFor(newOrg());
    const e = await h.manage<Created>(auth, { action: "create", url: rcv.url });
    expect(String((await deliverOne(auth)).headers["webhook-signature"])).toMatch(/^v1,/);
    await h.manage(auth, { action: "update", endpoint_id: e.id, signature_scheme: "ed25519" });
    const got = await deliverOne(auth);
    expect(String(got.headers["webhook-signature"])).toMatch(/^v1a,/);
    expect(verifiesWith(await jwks(), got)).toBe(true);
    await h.manage(auth, { action: "update", endpoint_id: e.id, signature_scheme: "hmac_sha256" });
    expect((await deliverOne(auth)).headers["webhook-signature-kid"]).toBeUndefined();
  });

  it("rotation: the new key signs first, the old one stays listed and signs beside it; audited; overlap 0 drops it", async () => {
    const auth = authFor(newOrg());
    await h.manage<Created>(auth, { action: "create", url: rcv.url, signature_scheme: "ed25519" });
    const [before] = await jwks();
    if (before === undefined) throw new Error("no key published");

    const first = await rotate({});
    if (!first.ok) throw new Error(`rotation failed: ${first.error.code}`);
    const rotated = first.body as { kid: string; previous: Array<{ kid: string }>; overlap_seconds: number };
    expect(rotated.kid).not.toBe(before.kid);
    expect(rotated.previous.map((p) => p.kid)).toContain(before.kid);
    expect(rotated.overlap_seconds).toBe(7 * 24 * 3600);

    const listed = await jwks();
    expect(listed.map((k) => k.kid).slice(0, 2)).toEqual([rotated.kid, before.kid]);
    const got = await deliverOne(auth);
    const kids = String(got.headers["webhook-signature-kid"]).split(" ");
    expect(kids.slice(0, 2)).toEqual([rotated.kid, before.kid]);
    const newest = listed.filter((k) => k.kid === rotated.kid);
    const oldest = listed.filter((k) => k.kid === before.kid);
    const firstOnly = { ...got, headers: { ...got.headers, "webhook-signature": String(got.headers["webhook-signature"]).split(" ")[0] } };
    expect(verifiesWith(newest, firstOnly)).toBe(true);
    // A receiver still holding the set from before the rotation verifies too.
    expect(verifiesWith(oldest, got)).toBe(true);

    const [audit] = await h.env.adminSql<{ actor: string; reason: string; outcome: string; target_ids: string[] }[]>`
      select actor, reason, outcome, target_ids from webhooks.audit_log where action = 'webhooks.rotate-signing-key' order by id desc limit 1`;
    expect(audit).toMatchObject({ actor: ACTOR, reason: "scheduled rotation", outcome: "succeeded" });
    expect(audit?.target_ids).toEqual(expect.arrayContaining([rotated.kid, before.kid]));

    // A reason is required, and a bad overlap is refused; both attempts are recorded.
    const noReason = await rotate({}, null);
    expect(noReason.ok ? "ok" : noReason.error.code).toBe("validation_error");
    const badOverlap = await rotate({ "overlap-hours": "-1" });
    expect(badOverlap.ok ? "ok" : badOverlap.error.code).toBe("validation_error");

    // A leaked key: overlap 0 leaves only the new key, which alone signs from then on.
    const emergency = await rotate({ "overlap-hours": "0" }, "suspected leak");
    if (!emergency.ok) throw new Error(emergency.error.message);
    const only = (emergency.body as { kid: string; previous: unknown[] }).kid;
    expect((emergency.body as { previous: unknown[] }).previous).toEqual([]);
    expect((await jwks()).map((k) => k.kid)).toEqual([only]);
    const after = await deliverOne(auth);
    expect(after.headers["webhook-signature-kid"]).toBe(only);
    expect(verifiesWith(await jwks(), after)).toBe(true);
    const [dropped] = await h.env.adminSql<{ n: number }[]>`
      select count(*)::int as n from webhooks.signing_keys where kid in (${rotated.kid}, ${before.kid}) and status = 'expired' and sealed_private_key is null`;
    expect(dropped?.n).toBe(2);
  });
});
