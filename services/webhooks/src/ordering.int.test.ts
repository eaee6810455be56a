// Proves ordered delivery per endpoint with two replicas of the service on one database and stream (each with
// its fan-out pullers and delivery workers): an endpoint with `ordering: per_endpoint` whose receiver fails the 2nd
// event twice gets every event strictly in publication order, one request at a time, the later ones held until
// the 2nd succeeds; an event that exhausts its attempts (dead-lettered) releases the ones after it; an unordered
// endpoint of the same org is not held back by its failures.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "@treasury/testing";
import type { DeliveryView } from "./domain/present.ts";
import { buildWebhooks, type WebhooksService } from "./service.ts";
import { authFor, newOrg, Receiver, startWebhooks, TEST_WEBHOOK_ENV, type Created, type Harness, type Received } from "./test-support.ts";

const EVENTS = 8;

let h: Harness;
let replica: WebhooksService;
const receivers: Receiver[] = [];

beforeAll(async () => {
  h = await startWebhooks();
  replica = await buildWebhooks(h.env.env("webhooks", TEST_WEBHOOK_ENV));
  await replica.start();
});
afterAll(async () => {
  await Promise.all(receivers.map((r) => r.close()));
  await replica?.stop();
  await h?.close();
});

async function receiver(): Promise<Receiver> {
  const r = await Receiver.start();
  receivers.push(r);
  return r;
}

const nOf = (r: Received): number => (JSON.parse(r.body) as { data: { n: number } }).data.n;

/** Publishes `count` events of one org back to back (each waits for the stream's ack), numbered 1…count. */
async function publishNumbered(orgId: string, count: number): Promise<void> {
  for (let n = 1; n <= count; n++) await h.publish({ type: "payout.executed", org_id: orgId, data: { n } });
}

/** The receiver never had two requests open at once, and took them in this order. */
function arrivals(r: Receiver): number[] {
  return r.received.map(nOf);
}

describe("ordering: per_endpoint", () => {
  it("a receiver failing the 2nd event twice gets every event strictly in order, one at a time", async () => {
    const auth = authFor(newOrg());
    const rcv = await receiver();
    let open = 0;
    let mostOpen = 0;
    const failuresOf2 = { left: 2 };
    const ANSWER_MS = 10;
    rcv.respond = (r) => {
      open += 1;
      mostOpen = Math.max(mostOpen, open);
      // Closed as the answer leaves: this timer is set before the receiver's own, with the same delay, so it fires
      // first; the next request can only come after the answer.
      setTimeout(() => (open -= 1), ANSWER_MS);
      if (nOf(r) === 2 && failuresOf2.left > 0) {
        failuresOf2.left -= 1;
        return { status: 503, delayMs: ANSWER_MS };
      }
      return { status: 200, delayMs: ANSWER_MS };
    };
    const e = await h.manage<Created>(auth, { action: "create", url: rcv.url, ordering: "per_endpoint" });
    expect(e.ordering).toBe("per_endpoint");
    await publishNumbered(auth.org_id, EVENTS);

    await waitFor(() => rcv.received.length >= EVENTS + 2, { timeoutMs: 30_000 });
    expect(arrivals(rcv)).toEqual([1, 2, 2, 2, ...Array.from({ length: EVENTS - 2 }, (_, i) => i + 3)]);
    expect(mostOpen).toBe(1);
    // The receiver answers before the worker records the answer, so the last status is awaited, not assumed.
    await waitFor(async () => {
      const ds = await h.manage<DeliveryView[]>(auth, { action: "deliveries", endpoint_id: e.id });
      return ds.length === EVENTS && ds.every((d) => d.status === "delivered");
    });
  });

  it("a dead-lettered event releases the ones after it; an unordered endpoint is never held", async () => {
    const auth = authFor(newOrg());
    const ordered = await receiver();
    const unordered = await receiver();
    for (const r of [ordered, unordered]) r.respond = (got) => (nOf(got) === 1 ? { status: 500 } : { status: 200 });
    const o = await h.manage<Created>(auth, { action: "create", url: ordered.url, ordering: "per_endpoint" });
    await h.manage<Created>(auth, { action: "create", url: unordered.url });
    await publishNumbered(auth.org_id, 3);

    // The unordered endpoint has 2 and 3 while 1 is still being retried.
    await waitFor(() => [2, 3].every((n) => unordered.received.some((r) => nOf(r) === n)));
    // The ordered one gets 1 for each of its 4 attempts (the test schedule), then 2 and 3.
    await waitFor(() => ordered.received.length >= 6, { timeoutMs: 30_000 });
    expect(arrivals(ordered)).toEqual([1, 1, 1, 1, 2, 3]);
    const ds = await h.manage<DeliveryView[]>(auth, { action: "deliveries", endpoint_id: o.id });
    expect(ds.map((d) => d.status).sort()).toEqual(["delivered", "delivered", "failed"]);
  });

  it("switching an endpoint to per_endpoint holds its waiting deliveries behind the oldest", async () => {
    const auth = authFor(newOrg());
    const rcv = await receiver();
    let failFirst = true;
    rcv.respond = (got) => {
      if (nOf(got) === 1 && failFirst) return { status: 503 };
      return { status: 200 };
    };
    const e = await h.manage<Created>(auth, { action: "create", url: rcv.url });
    await h.manage(auth, { action: "update", endpoint_id: e.id, ordering: "per_endpoint" });
    await publishNumbered(auth.org_id, 3);
    await waitFor(() => rcv.received.length >= 2, { timeoutMs: 10_000 });
    failFirst = false;
    await waitFor(() => rcv.received.filter((r) => nOf(r) !== 1).length >= 2, { timeoutMs: 10_000 });
    // Retries of 1 until it succeeded, then 2 and 3: nothing overtook it.
    const a = arrivals(rcv);
    const firstOther = a.findIndex((n) => n !== 1);
    expect(firstOther).toBeGreaterThanOrEqual(3);
    expect(a.slice(firstOther)).toEqual([2, 3]);
  });
});
