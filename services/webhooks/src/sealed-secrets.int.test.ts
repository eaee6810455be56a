// Proves that signing secrets are sealed at rest: after endpoints are created and secrets rotated no `whsec_`
// is left in any column of any table of the webhooks schema, deliveries still verify with the Standard Webhooks
// library, clear secrets of rows written before sealing are sealed by the start pass, and after a key rotation
// the reseal pass moves every row to the new key so the old one can leave the ring.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Webhook } from "standardwebhooks";
import { rpcSubject } from "@treasury/contracts";
import { generateKeyRingEntry, rpcCall } from "@treasury/service-kit";
import { setupTestEnv, waitFor, type TestEnv } from "@treasury/testing";
import type { EndpointView } from "./domain/present.ts";
import { buildWebhooks, type WebhooksService } from "./service.ts";
import { authFor, makeEvent, newOrg, publishEvent, Receiver, TEST_WEBHOOK_ENV } from "./test-support.ts";

type Created = EndpointView & { secret: string };

const k1 = generateKeyRingEntry("k1");
const k2 = generateKeyRingEntry("k2");

let env: TestEnv;
let svc: WebhooksService | undefined;
let receiver: Receiver;

async function stop(): Promise<void> {
  await svc?.stop();
  svc = undefined;
}

async function start(extra: Record<string, string>): Promise<WebhooksService> {
  await stop();
  svc = await buildWebhooks(env.env("webhooks", { ...TEST_WEBHOOK_ENV, ...extra }));
  await svc.start();
  return svc;
}

async function manage<T>(auth: ReturnType<typeof authFor>, body: Record<string, unknown>): Promise<T> {
  const r = await rpcCall(await env.nats(), rpcSubject(env.prefix, "webhooks", "manageWebhooks"), { auth, params: {}, query: {}, body }, { timeoutMs: 20_000 });
  if (!r.ok) throw new Error(`manageWebhooks ${String(body["action"])}: ${r.error.code} ${r.error.message}`);
  return r.body["data"] as T;
}

/** Every (table, column) of the webhooks schema whose text holds `whsec_`, from information_schema. */
async function columnsHoldingSecrets(): Promise<string[]> {
  const columns = await env.adminSql<{ table_name: string; column_name: string }[]>`
    select c.table_name, c.column_name from information_schema.columns c
    join information_schema.tables t on t.table_schema = c.table_schema and t.table_name = c.table_name and t.table_type = 'BASE TABLE'
    where c.table_schema = 'webhooks' order by 1, 2`;
  expect(columns.length).toBeGreaterThan(10);
  const found: string[] = [];
  for (const { table_name: t, column_name: c } of columns) {
    const [row] = await env.adminSql<{ n: number }[]>`
      select count(*)::int as n from ${env.adminSql("webhooks")}.${env.adminSql(t)} where ${env.adminSql(c)}::text like '%whsec\\_%'`;
    if ((row?.n ?? 0) > 0) found.push(`${t}.${c}`);
  }
  return found;
}

/** Publishes an event for the org and waits for its delivery; answers what the receiver got. */
async function deliver(orgId: string): Promise<{ body: string; headers: Record<string, string> }> {
  const evt = makeEvent({ type: "payout.failed", org_id: orgId });
  await publishEvent(await env.nats(), env.prefix, evt);
  const got = await waitFor(() => receiver.byEvent(evt.id)[0] ?? false, { timeoutMs: 15_000 });
  const h = got.headers;
  return {
    body: got.body,
    headers: {
      "webhook-id": String(h["webhook-id"]),
      "webhook-timestamp": String(h["webhook-timestamp"]),
      "webhook-signature": String(h["webhook-signature"]),
    },
  };
}

async function keyIdsOfEndpoints(): Promise<string[]> {
  const rows = await env.adminSql<{ k: string | null }[]>`select distinct secret_key_id as k from webhooks.endpoints order by 1`;
  return rows.map((r) => r.k ?? "none");
}

beforeAll(async () => {
  env = await setupTestEnv();
  receiver = await Receiver.start();
});
afterAll(async () => {
  await stop();
  await receiver?.close();
  await env?.cleanup();
});

describe("sealed signing secrets", () => {
  it("no whsec_ in any column after create and rotate; deliveries verify with the new and the previous secret", async () => {
    // Proves a read of the database (or a backup) yields no secret that signs, and signing still works.
    await start({ WEBHOOK_SECRET_KEYS: k1 });
    const auth = authFor(newOrg());
    const a = await manage<Created>(auth, { action: "create", url: receiver.url });
    const b = await manage<Created>(auth, { action: "create", url: `${receiver.url}?b`, events: ["refund.created"] });
    const rotated = await manage<Created>(auth, { action: "rotate_secret", endpoint_id: a.id });
    expect(rotated.secret).toMatch(/^whsec_/);
    expect(rotated.secret).not.toBe(a.secret);
    expect(b.secret).toMatch(/^whsec_/);

    const got = await deliver(auth.org_id);
    expect(new Webhook(rotated.secret).verify(got.body, got.headers)).toMatchObject({ type: "payout.failed" });
    expect(new Webhook(a.secret).verify(got.body, got.headers)).toMatchObject({ type: "payout.failed" });
    expect(await columnsHoldingSecrets()).toEqual([]);
    expect(await keyIdsOfEndpoints()).toEqual(["k1"]);
  });

  it("clear secrets written before sealing are sealed on start, and still sign", async () => {
    // Proves the upgrade path: rows a migration could not seal are sealed by the service's start pass.
    await stop();
    const orgId = newOrg();
    const clear = `whsec_${Buffer.alloc(24, 7).toString("base64")}`;
    const previous = `whsec_${Buffer.alloc(24, 9).toString("base64")}`;
    await env.adminSql`
      insert into webhooks.endpoints (id, org_id, livemode, url, events, secret, previous_secret, previous_secret_expires_at)
      values ('we_clear0000000000000000000', ${orgId}, false, ${receiver.url}, array['*'], ${clear}, ${previous}, now() + interval '1 hour')`;
    expect(await columnsHoldingSecrets()).toEqual(["endpoints.previous_secret", "endpoints.secret"]);

    await start({ WEBHOOK_SECRET_KEYS: k1 });
    expect(await columnsHoldingSecrets()).toEqual([]);
    const got = await deliver(orgId);
    expect(new Webhook(clear).verify(got.body, got.headers)).toMatchObject({ type: "payout.failed" });
    expect(new Webhook(previous).verify(got.body, got.headers)).toMatchObject({ type: "payout.failed" });
  });

  it("after a key rotation the reseal pass moves every row to the new key, and the old key can leave the ring", async () => {
    // Proves key rotation end to end: k1 → k1,k2 (k2 active) → reseal → k2 alone still opens every secret.
    await start({ WEBHOOK_SECRET_KEYS: k1 });
    const auth = authFor(newOrg());
    const e = await manage<Created>(auth, { action: "create", url: receiver.url });
    const rotated = await manage<Created>(auth, { action: "rotate_secret", endpoint_id: e.id });
    expect(await keyIdsOfEndpoints()).toEqual(["k1"]);

    // The start pass moves them; a second pass finds nothing left.
    const both = await start({ WEBHOOK_SECRET_KEYS: `${k1},${k2}`, WEBHOOK_SECRET_ACTIVE_KEY_ID: "k2" });
    expect(await keyIdsOfEndpoints()).toEqual(["k2"]);
    expect(await both.reseal()).toBe(0);

    await start({ WEBHOOK_SECRET_KEYS: k2 });
    const got = await deliver(auth.org_id);
    expect(new Webhook(rotated.secret).verify(got.body, got.headers)).toMatchObject({ type: "payout.failed" });
    expect(new Webhook(e.secret).verify(got.body, got.headers)).toMatchObject({ type: "payout.failed" });
    expect(await columnsHoldingSecrets()).toEqual([]);
  });

  it("an endpoint whose key left the ring too early recovers with rotate_secret", async () => {
    // Proves the recovery path for a lost key: the rotation answers a new secret (no previous one) that signs.
    await start({ WEBHOOK_SECRET_KEYS: k1 });
    const auth = authFor(newOrg());
    const e = await manage<Created>(auth, { action: "create", url: receiver.url });
    await start({ WEBHOOK_SECRET_KEYS: k2 });
    const rotated = await manage<Created>(auth, { action: "rotate_secret", endpoint_id: e.id });
    const got = await deliver(auth.org_id);
    expect(String(got.headers["webhook-signature"]).split(" ")).toHaveLength(1);
    expect(new Webhook(rotated.secret).verify(got.body, got.headers)).toMatchObject({ type: "payout.failed" });
  });
});
