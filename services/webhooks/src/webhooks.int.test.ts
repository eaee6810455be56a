// Proves the webhooks service through real RPC, a real EVENTS stream and real HTTP receivers: management,
// fan-out, Standard Webhooks signing (verified with the reference library), retries on the schedule, 410,
// isolation between orgs and environments, internal events never delivered, and bad input on every action.
import { jetstream } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Webhook } from "standardwebhooks";
import type { RpcReply } from "@treasury/contracts";
import { waitFor } from "@treasury/testing";
import type { DeliveryView, EndpointView } from "./domain/present.ts";
import { authFor, newOrg, Receiver, startWebhooks, type Harness } from "./test-support.ts";

let h: Harness;
const receivers: Receiver[] = [];

beforeAll(async () => {
  h = await startWebhooks();
});
afterAll(async () => {
  await Promise.all(receivers.map((r) => r.close()));
  await h?.close();
});

async function receiver(): Promise<Receiver> {
  const r = await Receiver.start();
  receivers.push(r);
  return r;
}

type Created = EndpointView & { secret: string };

function err(reply: RpcReply): { code: string; message: string; details?: Array<{ path: string }> } {
  if (reply.ok) throw new Error(`expected an error, got ${reply.status} ${JSON.stringify(reply.body)}`);
  return reply.error;
}

async function deliveriesOf(auth: ReturnType<typeof authFor>, endpointId: string): Promise<DeliveryView[]> {
  return h.manage<DeliveryView[]>(auth, { action: "deliveries", endpoint_id: endpointId });
}

describe("management", () => {
  it("create answers 201 with the secret once; list and update never show it", async () => {
    // Proves the endpoint shape, the whsec_ secret shown only at creation, and the default events ["*"].
    const auth = authFor(newOrg());
    const r = await h.call("manageWebhooks", auth, { action: "create", url: "http://127.0.0.1:9/hook", description: "main" });
    if (!r.ok) throw new Error(r.error.message);
    expect(r.status).toBe(201);
    const e = r.body["data"] as Created;
    expect(e).toMatchObject({ url: "http://127.0.0.1:9/hook", description: "main", events: ["*"], is_active: true, secret_rotated_at: null });
    expect(e.id).toMatch(/^we_[a-z0-9]{24}$/);
    expect(e.secret).toMatch(/^whsec_/);
    expect(Buffer.from(e.secret.slice(6), "base64")).toHaveLength(24);
    expect(Object.keys(e).sort()).toEqual(["created_at", "description", "events", "id", "is_active", "secret", "secret_rotated_at", "url"]);

    const list = await h.manage<EndpointView[]>(auth, { action: "list" });
    expect(list).toEqual([{ id: e.id, url: e.url, description: "main", events: ["*"], is_active: true, created_at: e.created_at, secret_rotated_at: null }]);

    const updated = await h.manage<EndpointView>(auth, {
      action: "update",
      endpoint_id: e.id,
      events: ["payout.failed", "payout.failed"],
      is_active: false,
      description: "x",
    });
    expect(updated).toMatchObject({ id: e.id, events: ["payout.failed"], is_active: false, description: "x" });
    expect(updated).not.toHaveProperty("secret");

    expect(await h.manage(auth, { action: "delete", endpoint_id: e.id })).toEqual({ id: e.id, deleted: true });
    expect(await h.manage(auth, { action: "list" })).toEqual([]);
    const again = err(await h.call("manageWebhooks", auth, { action: "delete", endpoint_id: e.id }));
    expect(again.code).toBe("webhook_endpoint_not_found");
  });

  it("live refuses http, private, loopback and link-local targets; accepts a public https address", async () => {
    // Proves the live URL rules at creation (the connect-time check is proven in the isolation test).
    const live = authFor(newOrg(), true);
    for (const url of [
      "http://1.1.1.1/h",
      "https://127.0.0.1/h",
      "https://10.0.0.7/h",
      "https://169.254.169.254/latest/meta-data",
      "https://[::1]/h",
      "https://localhost/h",
      "https://[::ffff:192.168.0.1]/h",
    ]) {
      expect(err(await h.call("manageWebhooks", live, { action: "create", url })).code, url).toBe("invalid_webhook_url");
    }
    const ok = await h.manage<Created>(live, { action: "create", url: "https://1.1.1.1/hooks" });
    expect(ok.url).toBe("https://1.1.1.1/hooks");
    const sandbox = authFor(newOrg());
    expect(err(await h.call("manageWebhooks", sandbox, { action: "create", url: "http://example.com/h" })).code).toBe("invalid_webhook_url");
    expect((await h.manage<Created>(sandbox, { action: "create", url: "http://localhost:1/h" })).url).toBe("http://localhost:1/h");
  });

  it("bad input on every action answers a precise code", async () => {
    // Proves each action's failures: validation_error with details, not-found codes, wrong state, wrong environment.
    const auth = authFor(newOrg());
    const rcv = await receiver();
    const e = await h.manage<Created>(auth, { action: "create", url: rcv.url });
    const code = async (body: unknown, a = auth) => err(await h.call("manageWebhooks", a, body));

    expect((await code({})).code).toBe("validation_error");
    expect((await code({ action: "explode" })).code).toBe("validation_error");
    expect((await code({ action: "create" })).details?.[0]?.path).toBe("url");
    expect((await code({ action: "create", url: 42 })).code).toBe("validation_error");
    expect((await code({ action: "create", url: "nope" })).code).toBe("invalid_webhook_url");
    const badEvents = await code({ action: "create", url: rcv.url, events: ["payout.failed", "ledger.transaction.posted"] });
    expect(badEvents.code).toBe("validation_error");
    expect(badEvents.details?.map((d) => d.path)).toEqual(["events.1"]);
    expect((await code({ action: "create", url: rcv.url, events: [] })).code).toBe("validation_error");
    expect((await code({ action: "update" })).code).toBe("validation_error");
    expect((await code({ action: "update", endpoint_id: "we_missing" })).code).toBe("webhook_endpoint_not_found");
    expect((await code({ action: "update", endpoint_id: e.id, url: "ftp://x" })).code).toBe("invalid_webhook_url");
    expect((await code({ action: "update", endpoint_id: e.id, is_active: "yes" })).code).toBe("validation_error");
    expect((await code({ action: "delete" })).code).toBe("validation_error");
    expect((await code({ action: "delete", endpoint_id: "we_missing" })).code).toBe("webhook_endpoint_not_found");
    expect((await code({ action: "test", endpoint_id: "we_missing" })).code).toBe("webhook_endpoint_not_found");
    expect((await code({ action: "deliveries", endpoint_id: "we_missing" })).code).toBe("webhook_endpoint_not_found");
    expect((await code({ action: "deliveries", status: "lost" })).code).toBe("validation_error");
    expect((await code({ action: "deliveries", limit: 1000 })).code).toBe("validation_error");
    expect((await code({ action: "retry" })).code).toBe("validation_error");
    expect((await code({ action: "retry", delivery_id: "whd_missing" })).code).toBe("webhook_delivery_not_found");
    expect((await code({ action: "replay" })).details?.map((d) => d.path)).toEqual(["endpoint_id", "since"]);
    expect((await code({ action: "replay", endpoint_id: e.id })).details?.map((d) => d.path)).toEqual(["since"]);
    expect((await code({ action: "replay", endpoint_id: e.id, since: "yesterday" })).code).toBe("validation_error");
    expect((await code({ action: "replay", endpoint_id: e.id, since: "-271821-04-20T00:00:00Z" })).code).toBe("validation_error");
    expect((await code({ action: "replay", delivery_id: "whd_x", endpoint_id: e.id })).code).toBe("validation_error");
    expect((await code({ action: "replay", delivery_id: "whd_missing" })).code).toBe("webhook_delivery_not_found");
    expect((await code({ action: "replay", endpoint_id: "we_missing", since: new Date().toISOString() })).code).toBe("webhook_endpoint_not_found");
    expect((await code({ action: "rotate_secret" })).code).toBe("validation_error");
    expect((await code({ action: "rotate_secret", endpoint_id: "we_missing" })).code).toBe("webhook_endpoint_not_found");
    // U+0000 cannot be stored by PostgreSQL: a 400, never a 500.
    expect((await code({ action: "create", url: rcv.url, description: "a\u0000b" })).code).toBe("validation_error");
    expect((await code({ action: "retry", delivery_id: "whd_\u0000" })).code).toBe("validation_error");
    expect(err(await h.call("sandboxSendTestWebhook", auth, { payload: { "k\u0000": 1 } })).code).toBe("validation_error");
    // The same id from the other environment or another org does not exist there.
    for (const other of [authFor(auth.org_id, true), authFor(newOrg())]) {
      for (const action of ["update", "delete", "test", "rotate_secret"]) {
        expect((await code({ action, endpoint_id: e.id }, other)).code, action).toBe("webhook_endpoint_not_found");
      }
      expect(await h.manage(other, { action: "list" })).toEqual([]);
    }
    // Retrying a delivered delivery is a state error (replay is the way to send it again).
    const evt = await h.publish({ type: "payout.failed", org_id: auth.org_id });
    await waitFor(() => rcv.byEvent(evt.id).length === 1);
    const [d] = await waitFor(async () => {
      const ds = await deliveriesOf(auth, e.id);
      return ds[0]?.status === "delivered" ? ds : false;
    });
    expect((await code({ action: "retry", delivery_id: d?.id })).code).toBe("invalid_state_transition");
    expect((await code({ action: "retry", delivery_id: d?.id }, authFor(newOrg()))).code).toBe("webhook_delivery_not_found");
  });

  it("test sends one real signed POST and reports the answer", async () => {
    // Proves `test`: a signed request reaches the endpoint; failures and unreachable hosts are reported, not thrown.
    const auth = authFor(newOrg());
    const rcv = await receiver();
    const e = await h.manage<Created>(auth, { action: "create", url: rcv.url });
    const ok = await h.manage<{ delivered: boolean; status: number; response_time_ms: number }>(auth, { action: "test", endpoint_id: e.id });
    expect(ok).toMatchObject({ delivered: true, status: 200 });
    expect(ok.response_time_ms).toBeGreaterThanOrEqual(0);
    const got = rcv.received.at(-1);
    if (!got) throw new Error("nothing received");
    expect(new Webhook(e.secret).verify(got.body, got.headers as Record<string, string>)).toMatchObject({ type: "sandbox.test", mode: "sandbox" });
    rcv.respond = () => ({ status: 503 });
    expect(await h.manage(auth, { action: "test", endpoint_id: e.id })).toMatchObject({ delivered: false, status: 503 });
    const dead = await h.manage<Created>(auth, { action: "create", url: "http://127.0.0.1:9/hook" });
    expect(await h.manage(auth, { action: "test", endpoint_id: dead.id })).toMatchObject({ delivered: false, status: null });
  });

  it("without WEBHOOK_ALLOW_PRIVATE_URLS, sandbox refuses loopback URLs and `test` tells an open port from a closed one by nothing", async () => {
    // Proves a sandbox key cannot probe the host's ports: creation refuses loopback, and endpoints stored earlier are neither reached nor described.
    const strict = await startWebhooks({ WEBHOOK_ALLOW_PRIVATE_URLS: "false" });
    try {
      const auth = authFor(newOrg());
      const rcv = await receiver();
      for (const url of [rcv.url, "http://localhost:9/hook", "https://127.0.0.1/hook", "https://10.0.0.7/hook"]) {
        const reply = await strict.call("manageWebhooks", auth, { action: "create", url });
        expect(err(reply).code, url).toBe("invalid_webhook_url");
      }
      // Endpoints stored before the rule applied: one where a server answers, one where nothing listens.
      await strict.env.adminSql`
        insert into webhooks.endpoints (id, org_id, livemode, url, events, secret)
        values ('we_plantedopen', ${auth.org_id}, false, ${rcv.url}, ${["*"]}, 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'),
               ('we_plantedshut', ${auth.org_id}, false, 'http://127.0.0.1:9/hook', ${["*"]}, 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw')`;
      const open = await strict.manage(auth, { action: "test", endpoint_id: "we_plantedopen" });
      const shut = await strict.manage(auth, { action: "test", endpoint_id: "we_plantedshut" });
      expect(open).toEqual({ delivered: false, status: null, response_time_ms: 0, error: "endpoint address not allowed" });
      expect(shut).toEqual(open);
      expect(rcv.received).toHaveLength(0);
    } finally {
      await strict.close();
    }
  });
});

describe("delivery", () => {
  it("delivers a signed event that the standardwebhooks library verifies, with the documented headers and body", async () => {
    // Proves signing, headers, the body shape and the delivery record of a first-attempt success.
    const auth = authFor(newOrg());
    const rcv = await receiver();
    const e = await h.manage<Created>(auth, { action: "create", url: rcv.url });
    const evt = await h.publish({ type: "checkout.completed", org_id: auth.org_id, data: { checkout_session_id: "cs_1", amount_cents: 1200 } });
    const [got] = await waitFor(() => (rcv.byEvent(evt.id).length > 0 ? rcv.byEvent(evt.id) : false));
    if (!got) throw new Error("nothing received");
    const payload = new Webhook(e.secret).verify(got.body, got.headers as Record<string, string>);
    expect(payload).toEqual({
      id: evt.id,
      type: "checkout.completed",
      created_at: evt.created_at,
      livemode: false,
      mode: "sandbox",
      sequence: evt.sequence,
      data: { checkout_session_id: "cs_1", amount_cents: 1200 },
    });
    expect(got.headers["content-type"]).toBe("application/json");
    expect(got.headers["x-webhook-event"]).toBe("checkout.completed");
    expect(got.headers["x-webhook-attempt"]).toBe("1");
    expect(got.headers["webhook-id"]).toMatch(/^whd_/);
    expect(String(got.headers["webhook-signature"]).split(" ")).toHaveLength(1);

    const [d] = await waitFor(async () => {
      const ds = await deliveriesOf(auth, e.id);
      return ds[0]?.status === "delivered" ? ds : false;
    });
    expect(d).toMatchObject({
      id: got.headers["webhook-id"],
      endpoint_id: e.id,
      event_id: evt.id,
      event_type: "checkout.completed",
      status: "delivered",
      attempts: 1,
      max_attempts: 4,
      response_status: 200,
      response_body: "ok",
      next_retry_at: null,
    });
    expect(Object.keys(d ?? {}).sort()).toEqual([
      "attempts",
      "created_at",
      "delivered_at",
      "endpoint_id",
      "event_id",
      "event_type",
      "id",
      "max_attempts",
      "next_retry_at",
      "response_body",
      "response_status",
      "response_time_ms",
      "status",
    ]);
    expect(typeof d?.delivered_at).toBe("string");
  });

  it("during a rotation both the old and the new secret verify, and the old one stops signing when it expires", async () => {
    // Proves rotate_secret: two space-separated v1 signatures for the overlap, each verifying on its own.
    const auth = authFor(newOrg());
    const rcv = await receiver();
    const e = await h.manage<Created>(auth, { action: "create", url: rcv.url });
    const rotated = await h.manage<Created & { previous_secret_expires_at: string }>(auth, { action: "rotate_secret", endpoint_id: e.id });
    expect(rotated.secret).not.toBe(e.secret);
    expect(typeof rotated.secret_rotated_at).toBe("string");
    expect(Date.parse(rotated.previous_secret_expires_at) - Date.now()).toBeGreaterThan(23 * 3600 * 1000);
    const evt = await h.publish({ type: "payout.created", org_id: auth.org_id });
    const [got] = await waitFor(() => (rcv.byEvent(evt.id).length > 0 ? rcv.byEvent(evt.id) : false));
    if (!got) throw new Error("nothing received");
    const headers = got.headers as Record<string, string>;
    expect(String(headers["webhook-signature"]).split(" ")).toHaveLength(2);
    expect(new Webhook(e.secret).verify(got.body, headers)).toMatchObject({ id: evt.id });
    expect(new Webhook(rotated.secret).verify(got.body, headers)).toMatchObject({ id: evt.id });

    await h.env.adminSql`update webhooks.endpoints set previous_secret_expires_at = now() - interval '1 second' where id = ${e.id}`;
    const later = await h.publish({ type: "payout.created", org_id: auth.org_id });
    const [got2] = await waitFor(() => (rcv.byEvent(later.id).length > 0 ? rcv.byEvent(later.id) : false));
    if (!got2) throw new Error("nothing received");
    expect(String(got2.headers["webhook-signature"]).split(" ")).toHaveLength(1);
    expect(() => new Webhook(e.secret).verify(got2.body, got2.headers as Record<string, string>)).toThrow();
    expect(new Webhook(rotated.secret).verify(got2.body, got2.headers as Record<string, string>)).toMatchObject({ id: later.id });
  });

  it("a receiver that fails then recovers gets the delivery on the schedule, same id and bytes, fresh signature", async () => {
    // Proves retries: 500, timeout and 429 are retried after the configured delays; attempt numbers count up.
    const auth = authFor(newOrg());
    const rcv = await receiver();
    rcv.respond = (_r, n) => (n === 1 ? { status: 500, body: "boom" } : n === 2 ? "hang" : n === 3 ? { status: 429 } : { status: 204 });
    const e = await h.manage<Created>(auth, { action: "create", url: rcv.url });
    const evt = await h.publish({ type: "refund.created", org_id: auth.org_id });
    const got = await waitFor(() => (rcv.byEvent(evt.id).length === 4 ? rcv.byEvent(evt.id) : false), { timeoutMs: 10_000 });
    expect(new Set(got.map((g) => g.headers["webhook-id"])).size).toBe(1);
    expect(new Set(got.map((g) => g.body)).size).toBe(1);
    expect(got.map((g) => g.headers["x-webhook-attempt"])).toEqual(["1", "2", "3", "4"]);
    for (const g of got) expect(new Webhook(e.secret).verify(g.body, g.headers as Record<string, string>)).toMatchObject({ id: evt.id });
    // Schedule 0, 50, 100, 150 ms (±10 %); attempt 2 hangs for the 1 s timeout.
    const gaps = got.slice(1).map((g, i) => g.at - (got[i] as { at: number }).at);
    expect(gaps[0]).toBeGreaterThanOrEqual(40);
    expect(gaps[1]).toBeGreaterThanOrEqual(1000 + 40);
    expect(gaps[2]).toBeGreaterThanOrEqual(130);
    const [d] = await waitFor(async () => {
      const ds = await deliveriesOf(auth, e.id);
      return ds[0]?.status === "delivered" ? ds : false;
    });
    expect(d).toMatchObject({ status: "delivered", attempts: 4, response_status: 204 });
  });

  it("redirects are not followed: a 3xx is a failed attempt and the redirect target gets nothing", async () => {
    // Proves the delivery client never follows Location (an SSRF path around the URL rules).
    const auth = authFor(newOrg());
    const [rcv, target] = [await receiver(), await receiver()];
    rcv.respond = () => ({ status: 307, headers: { location: target.url } });
    const e = await h.manage<Created>(auth, { action: "create", url: rcv.url });
    const evt = await h.publish({ type: "payout.failed", org_id: auth.org_id });
    await waitFor(async () => (await deliveriesOf(auth, e.id))[0]?.status === "failed");
    expect(rcv.byEvent(evt.id)).toHaveLength(4);
    expect(target.received).toHaveLength(0);
    expect((await deliveriesOf(auth, e.id))[0]?.response_status).toBe(307);
  });

  it("after the last attempt the delivery is failed; retry and replay send it again with the same id", async () => {
    // Proves exhaustion → failed, then manual retry, replay by id and replay {endpoint_id, since}.
    const auth = authFor(newOrg());
    const rcv = await receiver();
    rcv.respond = () => ({ status: 500, body: "x".repeat(5000) });
    const e = await h.manage<Created>(auth, { action: "create", url: rcv.url });
    const since = new Date(Date.now() - 1000).toISOString();
    const evt = await h.publish({ type: "payout.failed", org_id: auth.org_id });
    const [failed] = await waitFor(async () => {
      const ds = await deliveriesOf(auth, e.id);
      return ds[0]?.status === "failed" ? ds : false;
    });
    expect(failed).toMatchObject({ status: "failed", attempts: 4, max_attempts: 4, response_status: 500, next_retry_at: null });
    expect(failed?.response_body).toHaveLength(1024);
    expect(rcv.byEvent(evt.id)).toHaveLength(4);
    expect(await h.manage<DeliveryView[]>(auth, { action: "deliveries", status: "failed", event_type: "payout.failed" })).toHaveLength(1);
    expect(await h.manage<DeliveryView[]>(auth, { action: "deliveries", status: "delivered" })).toHaveLength(0);

    rcv.respond = () => ({ status: 200 });
    const retried = await h.manage<DeliveryView>(auth, { action: "retry", delivery_id: failed?.id });
    expect(retried.status).toBe("retrying");
    await waitFor(async () => (await deliveriesOf(auth, e.id))[0]?.status === "delivered");
    const replayed = await h.manage<DeliveryView>(auth, { action: "replay", delivery_id: failed?.id });
    expect(replayed.id).toBe(failed?.id);
    await waitFor(() => rcv.byEvent(evt.id).length === 6);
    expect(new Set(rcv.byEvent(evt.id).map((g) => g.headers["webhook-id"]))).toEqual(new Set([failed?.id]));
    expect(rcv.byEvent(evt.id).map((g) => g.headers["x-webhook-attempt"])).toEqual(["1", "2", "3", "4", "5", "6"]);

    // Two more failures, then a replay of everything failed since `since`.
    rcv.respond = () => ({ status: 503 });
    const more = [await h.publish({ type: "payout.failed", org_id: auth.org_id }), await h.publish({ type: "payout.failed", org_id: auth.org_id })];
    await waitFor(async () => (await h.manage<DeliveryView[]>(auth, { action: "deliveries", endpoint_id: e.id, status: "failed" })).length === 2);
    rcv.respond = () => ({ status: 200 });
    const r = await h.manage<{ replayed: number; delivery_ids: string[] }>(auth, { action: "replay", endpoint_id: e.id, since });
    expect(r.replayed).toBe(2);
    await waitFor(async () => (await h.manage<DeliveryView[]>(auth, { action: "deliveries", endpoint_id: e.id, status: "delivered" })).length === 3);
    for (const m of more) expect(rcv.byEvent(m.id).at(-1)?.headers["x-webhook-attempt"]).toBe("5");
  });

  it("when a failing endpoint succeeds again, its waiting retries are sent now rather than on their late slot", async () => {
    // Proves the recovery catch-up: the schedule bounds the wait, a healthy endpoint is not left waiting hours.
    const auth = authFor(newOrg());
    const rcv = await receiver();
    rcv.respond = () => ({ status: 500 });
    const e = await h.manage<Created>(auth, { action: "create", url: rcv.url });
    const stuck = [await h.publish({ type: "payout.created", org_id: auth.org_id }), await h.publish({ type: "payout.created", org_id: auth.org_id })];
    await waitFor(async () => (await deliveriesOf(auth, e.id)).filter((d) => d.status === "retrying" && d.attempts >= 1).length === 2);
    await h.env.adminSql`update webhooks.deliveries set next_retry_at = now() + interval '1 hour' where endpoint_id = ${e.id} and status = 'retrying'`;
    rcv.respond = () => ({ status: 200 });
    const fresh = await h.publish({ type: "payout.created", org_id: auth.org_id });
    await waitFor(() => [fresh, ...stuck].every((evt) => rcv.byEvent(evt.id).length > 0), { timeoutMs: 5_000 });
    await waitFor(async () => (await deliveriesOf(auth, e.id)).every((d) => d.status === "delivered"), { timeoutMs: 5_000 });
  });

  it("410 Gone fails the delivery and disables the endpoint", async () => {
    // Proves the receiver can switch itself off: no retries after 410, no new deliveries while disabled.
    const auth = authFor(newOrg());
    const rcv = await receiver();
    rcv.respond = () => ({ status: 410 });
    const e = await h.manage<Created>(auth, { action: "create", url: rcv.url });
    const evt = await h.publish({ type: "hold.created", org_id: auth.org_id });
    await waitFor(async () => (await deliveriesOf(auth, e.id))[0]?.status === "failed");
    expect(rcv.byEvent(evt.id)).toHaveLength(1);
    expect((await h.manage<EndpointView[]>(auth, { action: "list" }))[0]?.is_active).toBe(false);
    const later = await h.publish({ type: "hold.created", org_id: auth.org_id });
    const marker = authFor(newOrg());
    const mrcv = await receiver();
    await h.manage(marker, { action: "create", url: mrcv.url });
    const m = await h.publish({ type: "hold.created", org_id: marker.org_id });
    await waitFor(() => mrcv.byEvent(m.id).length === 1);
    expect(rcv.byEvent(later.id)).toHaveLength(0);
    expect(await deliveriesOf(auth, e.id)).toHaveLength(1);
  });

  it("an endpoint failing for 5 days is disabled; a deleted endpoint's queued deliveries fail without a request", async () => {
    // Proves the long-failure switch-off and that nothing is sent to a deleted endpoint.
    const auth = authFor(newOrg());
    const rcv = await receiver();
    rcv.respond = () => ({ status: 500 });
    const e = await h.manage<Created>(auth, { action: "create", url: rcv.url });
    await h.env.adminSql`update webhooks.endpoints set failing_since = now() - interval '5 days 1 minute' where id = ${e.id}`;
    await h.publish({ type: "payout.failed", org_id: auth.org_id });
    await waitFor(async () => (await h.manage<EndpointView[]>(auth, { action: "list" }))[0]?.is_active === false);
    const [row] = await h.env.adminSql`select disabled_reason from webhooks.endpoints where id = ${e.id}`;
    expect(row?.["disabled_reason"]).toBe("failing");

    const other = await h.manage<Created>(auth, { action: "create", url: rcv.url });
    const evt = await h.publish({ type: "payout.created", org_id: auth.org_id });
    await waitFor(async () => (await deliveriesOf(auth, other.id))[0]?.status === "retrying");
    // Park the retry, delete the endpoint, then make the retry due.
    await waitFor(async () => {
      await h.env.adminSql`update webhooks.deliveries set next_retry_at = now() + interval '1 hour' where endpoint_id = ${other.id} and lease_until is null`;
      const parked = await h.env.adminSql`
        select 1 from webhooks.deliveries where endpoint_id = ${other.id} and lease_until is null and next_retry_at > now() + interval '30 minutes'`;
      return parked.length === 1;
    });
    const before = rcv.byEvent(evt.id).length;
    await h.manage(auth, { action: "delete", endpoint_id: other.id });
    await h.env.adminSql`update webhooks.deliveries set next_retry_at = now() where endpoint_id = ${other.id}`;
    const [d] = await waitFor(async () => {
      const rows = await h.env.adminSql`select status, attempts from webhooks.deliveries where endpoint_id = ${other.id}`;
      return rows[0]?.["status"] === "failed" ? rows : false;
    });
    expect(d?.["attempts"]).toBe(before);
    expect(rcv.byEvent(evt.id)).toHaveLength(before);
  });

  it("events reach only endpoints of their org and environment, only when the filter matches; internal events never", async () => {
    // Proves isolation and filters, and that live attempts to a private address are refused at connect time.
    const orgA = newOrg();
    const [aSandbox, aLive, bSandbox, aFiltered] = [authFor(orgA), authFor(orgA, true), authFor(newOrg()), authFor(orgA)];
    const [ra, rl, rb, rf] = [await receiver(), await receiver(), await receiver(), await receiver()];
    const ea = await h.manage<Created>(aSandbox, { action: "create", url: ra.url });
    const eb = await h.manage<Created>(bSandbox, { action: "create", url: rb.url });
    const ef = await h.manage<Created>(aFiltered, { action: "create", url: rf.url, events: ["payout.created"] });
    // A live endpoint pointing at the local receiver cannot be created through the API; plant one to prove the
    // connect-time check and environment isolation.
    await h.env.adminSql`
      insert into webhooks.endpoints (id, org_id, livemode, url, events, secret)
      values ('we_plantedlive', ${orgA}, true, ${rl.url.replace("http:", "https:")}, ${["*"]}, ${ea.secret}),
             ('we_plantedhost', ${orgA}, true, ${rl.url.replace("http://127.0.0.1", "https://localhost")}, ${["*"]}, ${ea.secret})`;
    const internal = await h.publish({ type: "ledger.transaction.posted", org_id: orgA });
    const sandboxEvt = await h.publish({ type: "payout.failed", org_id: orgA });
    const liveEvt = await h.publish({ type: "payout.failed", org_id: orgA, livemode: true });
    const bEvt = await h.publish({ type: "payout.failed", org_id: bSandbox.org_id });
    const filtered = await h.publish({ type: "payout.created", org_id: orgA });

    await waitFor(() => ra.byEvent(sandboxEvt.id).length === 1 && rb.byEvent(bEvt.id).length === 1 && rf.byEvent(filtered.id).length === 1);
    const live = await waitFor(async () => {
      const ds = await h.manage<DeliveryView[]>(aLive, { action: "deliveries", endpoint_id: "we_plantedlive" });
      return ds[0]?.status === "retrying" || ds[0]?.status === "failed" ? ds : false;
    });
    expect(live.map((d) => d.event_id)).toEqual([liveEvt.id]);
    expect(live[0]?.response_status).toBeNull();
    // The hostname one is refused by the guarded DNS lookup at connect time, the IP literal before connecting.
    const planted = await waitFor(async () => {
      const rows = await h.env
        .adminSql`select endpoint_id, last_error from webhooks.deliveries where endpoint_id like 'we_planted%' and last_error is not null order by endpoint_id`;
      return rows.length === 2 ? rows : false;
    });
    expect(planted.map((p) => p["endpoint_id"])).toEqual(["we_plantedhost", "we_plantedlive"]);
    for (const p of planted) expect(String(p["last_error"])).toMatch(/private, loopback or link-local/);
    expect(rl.received).toHaveLength(0);

    expect(ra.received.map((r) => JSON.parse(r.body).id)).toEqual(expect.arrayContaining([sandboxEvt.id, filtered.id]));
    expect(ra.received.map((r) => JSON.parse(r.body).id)).not.toContain(liveEvt.id);
    expect(rb.received.map((r) => JSON.parse(r.body).id)).toEqual([bEvt.id]);
    expect(rf.received.map((r) => JSON.parse(r.body).id)).toEqual([filtered.id]);
    const [n] = await h.env.adminSql`select count(*)::int as n from webhooks.deliveries where event_id = ${internal.id}`;
    expect(n?.["n"]).toBe(0);
    const [inbox] = await h.env.adminSql`select count(*)::int as n from webhooks.inbox where event_id = ${internal.id}`;
    expect(inbox?.["n"]).toBe(1);
    expect((await deliveriesOf(aSandbox, ea.id)).map((d) => d.event_id).sort()).toEqual([sandboxEvt.id, filtered.id].sort());
    expect((await deliveriesOf(bSandbox, eb.id)).map((d) => d.event_id)).toEqual([bEvt.id]);
    expect((await deliveriesOf(aFiltered, ef.id)).map((d) => d.event_id)).toEqual([filtered.id]);
  });

  it("a redelivered event makes no second delivery row", async () => {
    // Proves exactly one delivery per (event, endpoint) even when the same event arrives twice.
    const auth = authFor(newOrg());
    const rcv = await receiver();
    const e = await h.manage<Created>(auth, { action: "create", url: rcv.url });
    const evt = await h.publish({ type: "sale.refunded", org_id: auth.org_id });
    await waitFor(() => rcv.byEvent(evt.id).length === 1);
    // Past the broker's de-duplication (another msgID) and past the inbox (deleted): only the unique key is left.
    await h.env.adminSql`delete from webhooks.inbox where event_id = ${evt.id}`;
    await jetstream(h.svc.nc).publish(`${h.env.prefix}evt.sale.refunded`, JSON.stringify(evt), { msgID: `${evt.id}-again` });
    await waitFor(async () => {
      const [row] = await h.env.adminSql`select count(*)::int as n from webhooks.inbox where event_id = ${evt.id}`;
      return row?.["n"] === 1;
    });
    expect(await deliveriesOf(auth, e.id)).toHaveLength(1);
    expect(rcv.byEvent(evt.id)).toHaveLength(1);
  });

  it("a slow endpoint does not delay another endpoint's deliveries", async () => {
    // Proves the per-endpoint concurrency limit: a hanging endpoint holds a few slots, the other drains at once.
    const auth = authFor(newOrg());
    const [slow, fast] = [await receiver(), await receiver()];
    slow.respond = () => "hang";
    await h.manage(auth, { action: "create", url: slow.url });
    await h.manage(auth, { action: "create", url: fast.url });
    const started = Date.now();
    const events = await Promise.all(Array.from({ length: 30 }, () => h.publish({ type: "checkout.failed", org_id: auth.org_id })));
    await waitFor(() => events.every((e) => fast.byEvent(e.id).length === 1), { timeoutMs: 5_000 });
    // The fast endpoint was done before the slow one's first attempts timed out (1 s): only 4 (its limit) of
    // the slow endpoint's 30 deliveries had been tried, and the rest never took a worker from the other.
    expect(slow.received.length).toBeLessThanOrEqual(4);
    expect(slow.received.length).toBeGreaterThan(0);
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});

describe("sandboxSendTestWebhook", () => {
  it("queues a sandbox payout.failed to matching endpoints; live keys get sandbox_only; replays answer the first event", async () => {
    // Proves the test event goes through outbox → stream → fan-out → signed delivery, without live access.
    const auth = authFor(newOrg());
    const rcv = await receiver();
    const e = await h.manage<Created>(auth, { action: "create", url: rcv.url });
    await h.manage(auth, { action: "create", url: rcv.url, events: ["checkout.completed"] });
    const r = await h.call("sandboxSendTestWebhook", auth, { idempotency_key: "k1" });
    if (!r.ok) throw new Error(r.error.message);
    expect(r.body).toMatchObject({ event_type: "payout.failed", webhook_deliveries_queued: 1 });
    const eventId = String(r.body["event_id"]);
    expect(eventId).toMatch(/^evt_/);
    const [got] = await waitFor(() => (rcv.byEvent(eventId).length > 0 ? rcv.byEvent(eventId) : false));
    if (!got) throw new Error("nothing received");
    expect(new Webhook(e.secret).verify(got.body, got.headers as Record<string, string>)).toMatchObject({
      type: "payout.failed",
      livemode: false,
      mode: "sandbox",
      data: { failure_reason: "sandbox_test" },
    });
    const replay = await h.call("sandboxSendTestWebhook", auth, { idempotency_key: "k1" });
    expect(replay.ok && replay.body["event_id"]).toBe(eventId);
    expect(err(await h.call("sandboxSendTestWebhook", auth, { idempotency_key: "k1", event_type: "hold.created" })).code).toBe("idempotency_conflict");
    const custom = await h.call("sandboxSendTestWebhook", auth, { event_type: "checkout.completed", payload: { amount_cents: 5 } });
    expect(custom.ok && custom.body).toMatchObject({ event_type: "checkout.completed", webhook_deliveries_queued: 2 });
    expect(err(await h.call("sandboxSendTestWebhook", authFor(auth.org_id, true), {})).code).toBe("sandbox_only");
    expect(err(await h.call("sandboxSendTestWebhook", auth, { event_type: "ledger.transaction.posted" })).code).toBe("validation_error");
  });
});

describe("operations", () => {
  it("/metrics counts attempts by outcome", async () => {
    // Proves webhook_attempt_duration_seconds: one retrying and one delivered attempt for a receiver that fails once.
    const auth = authFor(newOrg());
    const rcv = await receiver();
    rcv.respond = (_r, n) => (n === 1 ? { status: 500 } : { status: 204 });
    const before = await attemptCounts(h);
    const e = await h.manage<Created>(auth, { action: "create", url: rcv.url });
    const evt = await h.publish({ type: "refund.created", org_id: auth.org_id });
    await waitFor(async () => (await deliveriesOf(auth, e.id))[0]?.status === "delivered");
    const after = await attemptCounts(h);
    expect((after.get("retrying") ?? 0) - (before.get("retrying") ?? 0)).toBeGreaterThanOrEqual(1);
    expect((after.get("delivered") ?? 0) - (before.get("delivered") ?? 0)).toBeGreaterThanOrEqual(1);
    expect(rcv.byEvent(evt.id)).toHaveLength(2);
  });

  it("/metrics shows the deliveries waiting and how late the oldest due one is; the retention sweep deletes only finished deliveries past the period", async () => {
    // A second service in its own database whose delivery workers are stopped before the rows are written, so
    // they stay as they are while measured. (Only slowing the workers' poll was not enough: their first claim,
    // made at start, could reach the database after these inserts on a loaded machine and attempt d_due.)
    const slow = await startWebhooks({ WEBHOOK_POLL_INTERVAL_MS: "60000", WEBHOOK_RETENTION_DAYS: "30" });
    try {
      const auth = authFor(newOrg());
      const e = await slow.manage<Created>(auth, { action: "create", url: "http://127.0.0.1:9/hook" });
      await slow.svc.dispatcher.stop();
      expect(slow.svc.dispatcher.isRunning()).toBe(false);
      const rows: Array<[string, string, string, string]> = [
        // id, status, next_retry_at offset, updated_at offset
        ["d_due", "pending", "-60 seconds", "0 seconds"],
        ["d_later", "retrying", "1 hour", "0 seconds"],
        ["d_old_delivered", "delivered", "0 seconds", "-40 days"],
        ["d_old_failed", "failed", "0 seconds", "-31 days"],
        ["d_recent_delivered", "delivered", "0 seconds", "-29 days"],
        ["d_old_retrying", "retrying", "1 hour", "-40 days"],
      ];
      const sql = slow.env.adminSql;
      for (const [id, status, next, updated] of rows) {
        await sql`
          insert into webhooks.deliveries (id, org_id, livemode, endpoint_id, event_id, event_type, body, status, attempts, max_attempts, next_retry_at, updated_at)
          values (${id}, ${auth.org_id}, false, ${e.id}, ${`evt_${id}`}, 'refund.created', '{}', ${status}, 1, 3,
                  now() + ${next}::interval, now() + ${updated}::interval)`;
      }
      const text = await slow.svc.metrics.metrics();
      expect(text).toMatch(/^webhook_deliveries_waiting\{status="pending"[^}]*\} 1$/m);
      expect(text).toMatch(/^webhook_deliveries_waiting\{status="retrying"[^}]*\} 2$/m);
      const lag = Number(/^webhook_delivery_lag_seconds(?:\{[^}]*\})? ([\d.e+-]+)$/m.exec(text)?.[1]);
      expect(lag).toBeGreaterThanOrEqual(59);
      expect(lag).toBeLessThan(120);

      expect((await slow.svc.retention.sweep())["webhooks.deliveries"]).toBe(2);
      const left = await sql<{ id: string }[]>`select id from webhooks.deliveries where org_id = ${auth.org_id} order by id`;
      expect(left.map((r) => r.id)).toEqual(["d_due", "d_later", "d_old_retrying", "d_recent_delivered"]);
      expect((await slow.svc.retention.sweep())["webhooks.deliveries"]).toBe(0);
    } finally {
      await slow.close();
    }
  });
});

/** webhook_attempt_duration_seconds counts by outcome, from the service's registry. */
async function attemptCounts(harness: Harness): Promise<Map<string, number>> {
  const text = await harness.svc.metrics.getSingleMetricAsString("webhook_attempt_duration_seconds");
  const out = new Map<string, number>();
  for (const m of text.matchAll(/^webhook_attempt_duration_seconds_count\{[^}]*outcome="([a-z]+)"[^}]*\} (\d+)$/gm)) out.set(m[1] ?? "", Number(m[2]));
  return out;
}
