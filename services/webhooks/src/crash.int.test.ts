// Proves at-least-once delivery across a crash: the webhooks service is killed with SIGKILL in the middle of a
// burst of 1,000 events and started again; every event reaches the receiver, and every repeat carries the same
// webhook-id (one delivery row per event and endpoint).
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, expect, it } from "vitest";
import { rpcSubject, type RpcReply } from "@treasury/contracts";
import { rpcCall } from "@treasury/service-kit";
import { freePort, setupTestEnv, spawnService, waitFor, type SpawnedService, type TestEnv, natsOptions } from "@treasury/testing";
import { authFor, makeEvent, newOrg, publishEvent, Receiver, TEST_WEBHOOK_ENV } from "./test-support.ts";

const EVENTS = 1_000;
const PUBLISH_PARALLEL = 50;

let env: TestEnv;
let nc: NatsConnection;
let rcv: Receiver;
const children: SpawnedService[] = [];

beforeAll(async () => {
  env = await setupTestEnv();
  nc = await connect(natsOptions(env.natsUrl));
  rcv = await Receiver.start();
});
afterAll(async () => {
  for (const c of children) c.kill("SIGKILL");
  await Promise.all(children.map((c) => c.exited));
  await rcv?.close();
  await nc?.close();
  await env?.cleanup();
});

async function spawnWebhooks(): Promise<SpawnedService> {
  const child = spawnService("webhooks", env.env("webhooks", { ...TEST_WEBHOOK_ENV, WEBHOOK_TIMEOUT_MS: "2000", HEALTH_PORT: String(await freePort()) }));
  children.push(child);
  await child.ready;
  return child;
}

it("kill -9 mid-burst, restart: every event delivered at least once, repeats keep their webhook-id", { timeout: 120_000 }, async () => {
  // Proves durability of the pipeline (stream → delivery rows → attempts) across an unclean process death.
  const first = await spawnWebhooks();
  const auth = authFor(newOrg());
  const reply: RpcReply = await rpcCall(
    nc,
    rpcSubject(env.prefix, "webhooks", "manageWebhooks"),
    { auth, params: {}, query: {}, body: { action: "create", url: rcv.url } },
    { timeoutMs: 10_000 },
  );
  if (!reply.ok) throw new Error(reply.error.message);
  // A little latency keeps attempts in flight when the process dies.
  rcv.respond = () => ({ status: 200, delayMs: 2 });

  const events = Array.from({ length: EVENTS }, () => makeEvent({ type: "payout.executed", org_id: auth.org_id }));
  const publishing = (async () => {
    for (let i = 0; i < events.length; i += PUBLISH_PARALLEL) {
      await Promise.all(events.slice(i, i + PUBLISH_PARALLEL).map((e) => publishEvent(nc, env.prefix, e)));
    }
  })();
  await waitFor(() => rcv.received.length >= 150, { timeoutMs: 30_000, intervalMs: 5 });
  first.kill("SIGKILL");
  const exit = await first.exited;
  expect(exit.signal).toBe("SIGKILL");
  const atKill = rcv.received.length;
  await publishing;
  expect(atKill).toBeLessThan(EVENTS);

  await spawnWebhooks();
  // Messages the dead consumer had pulled come back after the broker's ack wait (the kit's default, 10 s).
  await waitFor(() => new Set(rcv.received.map((r) => (JSON.parse(r.body) as { id: string }).id)).size === EVENTS, { timeoutMs: 90_000, intervalMs: 200 });

  const idsByEvent = new Map<string, Set<string>>();
  for (const r of rcv.received) {
    const eventId = (JSON.parse(r.body) as { id: string }).id;
    const set = idsByEvent.get(eventId) ?? new Set<string>();
    set.add(String(r.headers["webhook-id"]));
    idsByEvent.set(eventId, set);
  }
  expect(idsByEvent.size).toBe(EVENTS);
  for (const e of events) expect(idsByEvent.get(e.id)?.size, e.id).toBe(1);
  const rows = await waitFor(async () => {
    const r = await env.adminSql<{ n: number; delivered: number; events: number }[]>`
      select count(*)::int as n, count(*) filter (where status = 'delivered')::int as delivered, count(distinct event_id)::int as events
      from webhooks.deliveries`;
    return r[0]?.delivered === EVENTS ? r[0] : false;
  });
  expect(rows).toEqual({ n: EVENTS, delivered: EVENTS, events: EVENTS });
  console.log(`kill -9 after ${atKill} receipts; ${rcv.received.length} receipts for ${EVENTS} events (${rcv.received.length - EVENTS} repeats)`);
});
