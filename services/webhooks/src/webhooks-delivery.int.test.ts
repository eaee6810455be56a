// Proves delivery through a real EVENTS stream and real HTTP receivers: fan-out, Standard Webhooks signing
// (verified with the reference library), retries on the schedule, 410, isolation between orgs and environments,
// internal events never delivered, and manual retry and replay.
import { jetstream } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Webhook } from "standardwebhooks";
import { waitFor } from "@treasury/testing";
import type { DeliveryView, EndpointView } from "./domain/present.ts";
import { authFor, newOrg, Receiver, startWebhooks, type Created, type Harness } from "./test-support.ts";

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
      endpoint_id: e.id,
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
