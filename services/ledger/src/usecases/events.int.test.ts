// Proves every event the posting engine writes reaches JetStream carrying the request id and trace of the request
// that caused it: group-committed postings (ledger.transaction.posted, hold.created) and requests that run alone
// (hold.released), each item of a batch's ledger.transaction.posted naming its own request.
import { jetstreamManager } from "@nats-io/jetstream";
import { eventsStreamName, NATS_HEADERS, type EventEnvelope } from "@treasury/contracts";
import { rpcCall } from "@treasury/service-kit";
import { waitFor } from "@treasury/testing";
import { ROOT_CONTEXT, trace, TraceFlags, type Context } from "@opentelemetry/api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newOrg, ok, startLedger, type LedgerHarness } from "../test-support.ts";
import { createParticipant } from "./participants.ts";

let h: LedgerHarness;

beforeAll(async () => {
  h = await startLedger();
});
afterAll(async () => {
  await h?.close();
});

/** A caller's trace: a remote parent with a known trace id. */
function traced(traceId: string): Context {
  return trace.setSpanContext(ROOT_CONTEXT, { traceId, spanId: traceId.slice(0, 16), traceFlags: TraceFlags.SAMPLED, isRemote: true });
}

async function post(payload: unknown, requestId: string, traceId: string) {
  return rpcCall(await h.env.nats(), `${h.env.prefix}svc.ledger.post`, payload, { timeoutMs: 20_000, requestId, parent: traced(traceId) });
}

/** The org's events on the stream: type, request id and trace id from the message headers, and the data. */
async function streamEvents(orgId: string): Promise<{ type: string; requestId: string; traceId: string; data: Record<string, unknown> }[]> {
  const jsm = await jetstreamManager(await h.env.nats());
  const name = eventsStreamName(h.env.prefix);
  const { state } = await jsm.streams.info(name);
  const out = [];
  for (let seq = state.first_seq; seq <= state.last_seq && state.messages > 0; seq++) {
    const m = await jsm.streams.getMessage(name, { seq });
    if (!m) continue;
    const env = m.json<EventEnvelope & { data: Record<string, unknown> }>();
    if (env.org_id !== orgId) continue;
    out.push({ type: env.type, requestId: m.header.get(NATS_HEADERS.requestId), traceId: m.header.get("traceparent").split("-")[1] ?? "", data: env.data });
  }
  return out;
}

describe("event headers", () => {
  it("events carry their request's id and trace, from batches and from requests that run alone", async () => {
    const org = newOrg();
    await createParticipant(h.deps, { orgId: org, livemode: false }, { participant_id: "c1" });
    const traceA = "0af7651916cd43dd8448eb211c80319c";
    const traceB = "1bf7651916cd43dd8448eb211c80319d";
    const traceC = "2cf7651916cd43dd8448eb211c80319e";
    const sale = (ref: string) => ({
      org_id: org,
      livemode: false,
      kind: "sale",
      reference_id: ref,
      postings: [{ debit: { system: "platform_cash" }, credit: { participant_id: "c1" }, amount: 100 }],
      holds_create: [{ wallet: { participant_id: "c1" }, amount: 100 }],
    });
    // Two sales sent together: one batch, one ledger.transaction.posted listing both.
    const [a, b] = await Promise.all([post(sale("s-a"), "req_a", traceA), post(sale("s-b"), "req_b", traceB)]);
    const holdA = (ok(a ?? ({ ok: false } as never)).body["holds_created"] as { hold_id: string }[])[0]?.hold_id ?? "";
    ok(b ?? ({ ok: false } as never));
    ok(await post({ org_id: org, livemode: false, kind: "hold_release", reference_id: holdA, holds_release: [holdA] }, "req_c", traceC));

    await waitFor(async () => (await streamEvents(org)).length >= 4, { timeoutMs: 15_000 });
    const events = await streamEvents(org);
    const created = events.filter((e) => e.type === "hold.created");
    expect(created.map((e) => [e.requestId, e.traceId]).sort()).toEqual([
      ["req_a", traceA],
      ["req_b", traceB],
    ]);
    const released = events.find((e) => e.type === "hold.released");
    expect([released?.requestId, released?.traceId]).toEqual(["req_c", traceC]);
    const posted = events.filter((e) => e.type === "ledger.transaction.posted");
    for (const e of posted) expect(["req_a", "req_b", "req_c"]).toContain(e.requestId);
    const items = posted.flatMap((e) => e.data["transactions"] as { reference_id: string; request_id: string; traceparent: string }[]);
    const byRef = new Map(items.map((i) => [i.reference_id, i]));
    expect(byRef.get("s-a")?.request_id).toBe("req_a");
    expect(byRef.get("s-a")?.traceparent).toContain(traceA);
    expect(byRef.get("s-b")?.request_id).toBe("req_b");
    expect(byRef.get("s-b")?.traceparent).toContain(traceB);
    expect(byRef.get(holdA)?.request_id).toBe("req_c");
  });
});
