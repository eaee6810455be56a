// Proves the fan-out's owner check on fakes: an event becomes delivery rows only when its subject is its type's
// subject and its source is the type's owner (or webhooks' own sandbox test event, in sandbox only); internal
// events never. A dropped event is logged, counted by reason, and stores nothing.
import { eventSubject, newId, type EventEnvelope, type EventType } from "@treasury/contracts";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { FakeFanOutStore } from "./fakes.ts";
import { fanOut, type DropReason } from "./fanout.ts";

const PREFIX = "t1.";

function event(type: string, over: Partial<EventEnvelope> = {}): EventEnvelope {
  return { id: newId("evt"), type, org_id: "org_a", livemode: false, created_at: new Date(0).toISOString(), sequence: 1, source: "refunds", data: {}, ...over };
}

async function run(evt: EventEnvelope, subject = eventSubject(PREFIX, evt.type as EventType)) {
  const store = new FakeFanOutStore(2);
  const dropped: DropReason[] = [];
  let hinted = 0;
  const n = await fanOut(
    store,
    evt,
    { subject, streamSeq: 1, prefix: PREFIX, log: pino({ level: "silent" }), dropped: (r) => dropped.push(r) },
    3,
    () => hinted++,
  );
  return { n, stored: store.inserted, dropped, hinted };
}

describe("fan-out owner check", () => {
  it("an event its owner emitted on its own subject becomes delivery rows of its tenant, and the workers are hinted", async () => {
    const evt = event("refund.created", { org_id: "org_b", livemode: true });
    const r = await run(evt);
    expect(r).toEqual({ n: 2, stored: [{ tenant: { orgId: "org_b", livemode: true }, id: evt.id, type: "refund.created" }], dropped: [], hinted: 1 });
  });

  it("a source that is not the type's owner is dropped as not_owner", async () => {
    const r = await run(event("refund.created", { source: "payments" }));
    expect(r).toEqual({ n: 0, stored: [], dropped: ["not_owner"], hinted: 0 });
  });

  it("a subject that is not the type's subject is dropped as subject_mismatch", async () => {
    const r = await run(event("refund.created"), eventSubject(PREFIX, "payout.failed"));
    expect(r).toEqual({ n: 0, stored: [], dropped: ["subject_mismatch"], hinted: 0 });
  });

  it("webhooks' own sandbox test event of any public type is delivered in sandbox, never in live", async () => {
    expect((await run(event("payout.failed", { source: "webhooks" }))).n).toBe(2);
    const liveTest = await run(event("payout.failed", { source: "webhooks", livemode: true }));
    expect([liveTest.n, liveTest.dropped]).toEqual([0, ["not_owner"]]);
  });

  it("internal events are never delivered, and are not counted as dropped", async () => {
    const r = await run(event("ledger.transaction.posted", { source: "ledger" }));
    expect(r).toEqual({ n: 0, stored: [], dropped: [], hinted: 0 });
  });
});
