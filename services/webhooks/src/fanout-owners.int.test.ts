// Proves the fan-out delivers only what an event type's owner emitted (ADR 0011): `checkout.completed` from another
// source on its own subject, or on another service's subject, is dropped, counted and logged; the real one published
// after them is delivered, and no delivery exists for any forged one (one fan-out consumer: stream order).
import { jetstream } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EventEnvelope } from "@treasury/contracts";
import { waitFor } from "@treasury/testing";
import type { DeliveryView, EndpointView } from "./domain/present.ts";
import { authFor, makeEvent, newOrg, Receiver, startWebhooks, type Harness } from "./test-support.ts";

let h: Harness;
let rcv: Receiver;

beforeAll(async () => {
  h = await startWebhooks({ WEBHOOK_FANOUT_CONSUMERS: "1" });
  rcv = await Receiver.start();
});
afterAll(async () => {
  await rcv?.close();
  await h?.close();
});

/** Publishes `evt` as the test superuser on `subject` (below the file's prefix), whatever its type says. */
async function inject(subject: string, evt: EventEnvelope): Promise<void> {
  await jetstream(await h.env.nats()).publish(`${h.env.prefix}${subject}`, JSON.stringify(evt), { msgID: evt.id });
}

async function dropped(reason: string): Promise<number> {
  const metric = await h.svc.metrics.getSingleMetric("webhook_events_dropped_total")?.get();
  return metric?.values.find((v) => v.labels["reason"] === reason)?.value ?? 0;
}

describe("fan-out and event ownership", () => {
  it("drops a checkout.completed that payments did not emit, and delivers the one it did", async () => {
    // Proves a forged event (wrong source, or a payments type on kyc's subject) reaches no endpoint.
    const auth = authFor(newOrg());
    const endpoint = await h.manage<EndpointView>(auth, { action: "create", url: rcv.url });
    const forged = [
      { subject: "evt.checkout.completed", evt: makeEvent({ type: "checkout.completed", org_id: auth.org_id, source: "kyc" }) },
      { subject: "evt.checkout.completed", evt: makeEvent({ type: "checkout.completed", org_id: auth.org_id, source: "gateway" }) },
      { subject: "evt.internal.kyc.approved", evt: makeEvent({ type: "checkout.completed", org_id: auth.org_id, source: "payments" }) },
    ];
    const before = { owner: await dropped("not_owner"), subject: await dropped("subject_mismatch") };
    for (const f of forged) await inject(f.subject, f.evt);
    const real = makeEvent({ type: "checkout.completed", org_id: auth.org_id });
    expect(real.source).toBe("payments");
    await inject("evt.checkout.completed", real);

    await waitFor(() => rcv.received.some((r) => r.body.includes(real.id)));
    const deliveries = await h.manage<DeliveryView[]>(auth, { action: "deliveries", endpoint_id: endpoint.id });
    expect(deliveries.map((d) => d.event_id)).toEqual([real.id]);
    expect(rcv.received.filter((r) => forged.some((f) => r.body.includes(f.evt.id)))).toEqual([]);
    expect(await dropped("not_owner")).toBe(before.owner + 2);
    expect(await dropped("subject_mismatch")).toBe(before.subject + 1);
  });
});
