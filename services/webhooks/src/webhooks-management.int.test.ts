// Proves the webhooks service's API through real RPC and real HTTP receivers: endpoint management, bad input on
// every action with a precise code, the `test` action, the sandbox test event through the EVENTS stream, and the
// service's metrics and retention sweep.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Webhook } from "standardwebhooks";
import { waitFor } from "@treasury/testing";
import type { DeliveryView, EndpointView } from "./domain/present.ts";
import { authFor, err, newOrg, Receiver, startWebhooks, type Created, type Harness } from "./test-support.ts";

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
    expect(Object.keys(e).sort()).toEqual([
      "created_at",
      "description",
      "events",
      "id",
      "is_active",
      "ordering",
      "secret",
      "secret_rotated_at",
      "signature_scheme",
      "url",
    ]);

    const list = await h.manage<EndpointView[]>(auth, { action: "list" });
    expect(list).toEqual([
      {
        id: e.id,
        url: e.url,
        description: "main",
        events: ["*"],
        is_active: true,
        signature_scheme: "hmac_sha256",
        ordering: "none",
        created_at: e.created_at,
        secret_rotated_at: null,
      },
    ]);

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
