// Proves endpoint management on in-memory fakes: create (secret shown once, stored only sealed, URL and event
// rules, the per-environment limit, no keys), update, and rotate_secret (the previous secret keeps signing for
// the overlap; one whose key left the ring is dropped). No database, no network.
import { DomainError } from "@treasury/contracts";
import { describe, expect, it } from "vitest";
import { createEndpoint, ENDPOINTS_MAX, rotateSecret, updateEndpoint } from "./endpoints.ts";
import { fakeDeps, testSealer } from "./fakes.ts";
import { openSecrets, signingSecrets } from "./secrets.ts";

const sandbox = { orgId: "org_a", livemode: false };
const live = { orgId: "org_a", livemode: true };

async function refusal(p: Promise<unknown>): Promise<DomainError> {
  const e: unknown = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  if (!(e instanceof DomainError)) throw new Error(`expected a DomainError, got ${String(e)}`);
  return e;
}

describe("create", () => {
  it("answers the secret once and stores it only sealed, bound to the endpoint; events are de-duplicated", async () => {
    const deps = fakeDeps();
    const created = await createEndpoint(deps, sandbox, { url: "https://hooks.example.com/in", events: ["refund.created", "refund.created", "sale.refunded"] });
    expect(created.secret).toMatch(/^whsec_/);
    expect(created).toMatchObject({ url: "https://hooks.example.com/in", events: ["refund.created", "sale.refunded"], is_active: true });
    const stored = deps.store.endpoint(created.id);
    expect(stored).toMatchObject({ secret: null, previous_secret: null, secret_key_id: "k1" });
    expect(JSON.stringify(stored)).not.toContain(created.secret.slice("whsec_".length));
    expect(openSecrets(deps.sealer ?? testSealer(), stored ?? ({} as never))).toEqual({ current: created.secret, previous: null });
    expect(deps.store.createLocks).toEqual([sandbox]);
  });

  it("refuses what the URL and event rules refuse, before anything is stored", async () => {
    const deps = fakeDeps();
    deps.http.hosts.set("internal.example.com", "blocked");
    deps.http.hosts.set("nowhere.example.com", "unresolved");
    const cases: Array<[Promise<unknown>, string, RegExp | undefined]> = [
      [createEndpoint(deps, live, { url: "http://hooks.example.com/in" }), "invalid_webhook_url", undefined],
      [createEndpoint(deps, live, { url: "https://10.0.0.1/in" }), "invalid_webhook_url", undefined],
      [createEndpoint(deps, live, { url: "https://internal.example.com/in" }), "invalid_webhook_url", /must not resolve to private/],
      [createEndpoint(deps, live, { url: "https://nowhere.example.com/in" }), "invalid_webhook_url", /does not resolve/],
      [createEndpoint(deps, sandbox, { url: "http://127.0.0.1:9/in" }), "invalid_webhook_url", undefined],
      [createEndpoint(deps, sandbox, { url: "https://hooks.example.com/in", events: ["no.such_event"] }), "validation_error", undefined],
    ];
    for (const [p, code, message] of cases) {
      const e = await refusal(p);
      expect(e.code).toBe(code);
      if (message !== undefined) expect(e.message).toMatch(message);
    }
    expect(deps.store.endpoints.size).toBe(0);
  });

  it("sandbox may use loopback URLs only where the deployment allows private URLs", async () => {
    const deps = fakeDeps({ config: { allowPrivateUrls: true } });
    const created = await createEndpoint(deps, sandbox, { url: "http://127.0.0.1:9/in" });
    expect(created.url).toBe("http://127.0.0.1:9/in");
    expect((await refusal(createEndpoint(deps, live, { url: "http://127.0.0.1:9/in" }))).code).toBe("invalid_webhook_url");
  });

  it("at most ENDPOINTS_MAX endpoints per environment; a deleted one frees its place, the other environment has its own", async () => {
    const deps = fakeDeps();
    for (let i = 0; i < ENDPOINTS_MAX; i++) await createEndpoint(deps, sandbox, { url: `https://hooks.example.com/${i}` });
    const e = await refusal(createEndpoint(deps, sandbox, { url: "https://hooks.example.com/over" }));
    expect([e.code, e.message]).toEqual(["validation_error", `At most ${ENDPOINTS_MAX} webhook endpoints per environment`]);
    expect(deps.store.endpoints.size).toBe(ENDPOINTS_MAX);
    await createEndpoint(deps, live, { url: "https://hooks.example.com/live" });
    const [first] = deps.store.endpoints.keys();
    await deps.store.softDeleteEndpoint(sandbox, first ?? "");
    await createEndpoint(deps, sandbox, { url: "https://hooks.example.com/again" });
  });

  it("without keys, create and rotate_secret answer service_unavailable", async () => {
    const deps = fakeDeps({ sealer: undefined });
    expect((await refusal(createEndpoint(deps, sandbox, { url: "https://hooks.example.com/in" }))).code).toBe("service_unavailable");
    expect((await refusal(rotateSecret(deps, sandbox, "we_1"))).code).toBe("service_unavailable");
  });
});

describe("update", () => {
  it("changes only what it is given; another org's or an unknown endpoint is webhook_endpoint_not_found", async () => {
    const deps = fakeDeps();
    const created = await createEndpoint(deps, sandbox, { url: "https://hooks.example.com/in", description: "main" });
    const updated = await updateEndpoint(deps, sandbox, { endpoint_id: created.id, events: ["payout.failed"], is_active: false });
    expect(updated).toMatchObject({ url: "https://hooks.example.com/in", description: "main", events: ["payout.failed"], is_active: false });
    const moved = await updateEndpoint(deps, sandbox, { endpoint_id: created.id, url: "https://other.example.com/in" });
    expect(moved).toMatchObject({ url: "https://other.example.com/in", events: ["payout.failed"] });
    expect((await refusal(updateEndpoint(deps, { orgId: "org_b", livemode: false }, { endpoint_id: created.id, is_active: true }))).code).toBe(
      "webhook_endpoint_not_found",
    );
    expect((await refusal(updateEndpoint(deps, sandbox, { endpoint_id: "we_unknown", is_active: true }))).code).toBe("webhook_endpoint_not_found");
    const bad = await refusal(updateEndpoint(deps, live, { endpoint_id: created.id, url: "http://x.example.com" }));
    expect(bad.code).toBe("invalid_webhook_url");
  });
});

describe("rotate_secret", () => {
  it("answers a new secret; the previous one signs beside it until the overlap ends", async () => {
    const deps = fakeDeps();
    const created = await createEndpoint(deps, sandbox, { url: "https://hooks.example.com/in" });
    const rotated = await rotateSecret(deps, sandbox, created.id);
    expect(rotated.secret).toMatch(/^whsec_/);
    expect(rotated.secret).not.toBe(created.secret);
    const stored = deps.store.endpoint(created.id);
    if (stored === undefined) throw new Error("endpoint vanished");
    const sealer = deps.sealer ?? testSealer();
    expect(openSecrets(sealer, stored)).toEqual({ current: rotated.secret, previous: created.secret });
    const expires = stored.previous_secret_expires_at ?? new Date(0);
    expect(rotated.previous_secret_expires_at).toBe(expires.toISOString());
    expect(signingSecrets(sealer, stored, new Date(expires.getTime() - 1))).toEqual([rotated.secret, created.secret]);
    expect(signingSecrets(sealer, stored, expires)).toEqual([rotated.secret]);
    expect((await refusal(rotateSecret(deps, sandbox, "we_unknown"))).code).toBe("webhook_endpoint_not_found");
  });

  it("a secret whose key left the ring is not kept as the previous one: the rotation is how such an endpoint recovers", async () => {
    const old = fakeDeps({ sealer: testSealer("old") });
    const created = await createEndpoint(old, sandbox, { url: "https://hooks.example.com/in" });
    const deps = fakeDeps({ sealer: testSealer("new") });
    deps.store.endpoints = old.store.endpoints;
    const rotated = await rotateSecret(deps, sandbox, created.id);
    const stored = deps.store.endpoint(created.id);
    expect(stored).toMatchObject({ secret_key_id: "new", previous_secret_sealed: null });
    expect(openSecrets(deps.sealer ?? testSealer(), stored ?? ({} as never))).toEqual({ current: rotated.secret, previous: null });
  });
});
