// Proves the sandbox test clock: an org reads and advances its sandbox's time, the advance and its
// sandbox_clock.advanced event commit together, the clock never moves back, live keys are refused, and the
// ledger's time-driven rules (a hold's readiness) read the advanced clock.
import { waitFor } from "@treasury/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { authFor, err, newOrg, ok, startLedger, type LedgerHarness } from "./test-support.ts";
import { createParticipant } from "./usecases/participants.ts";

let h: LedgerHarness;

beforeAll(async () => {
  h = await startLedger();
});
afterAll(async () => {
  await h?.close();
});

const DAY = 86_400;

async function clockOf(org: string): Promise<{ now: string; advanced_by_seconds: number }> {
  return ok(await h.call("getSandboxClock", authFor(org))).body["clock"] as { now: string; advanced_by_seconds: number };
}

describe("sandbox clock", () => {
  it("starts at real time, advances by seconds or to a time, and writes one event per advance", async () => {
    const org = newOrg();
    const before = Date.now();
    const first = await clockOf(org);
    expect(first.advanced_by_seconds).toBe(0);
    expect(Math.abs(Date.parse(first.now) - before)).toBeLessThan(5_000);

    const byDays = ok(await h.call("advanceSandboxClock", authFor(org), { body: { by_seconds: 3 * DAY } })).body["clock"] as { advanced_by_seconds: number };
    expect(byDays.advanced_by_seconds).toBe(3 * DAY);
    const target = new Date(Date.now() + 10 * DAY * 1000);
    const to = ok(await h.call("advanceSandboxClock", authFor(org), { body: { to: target.toISOString() } })).body["clock"] as {
      now: string;
      advanced_by_seconds: number;
    };
    expect(Date.parse(to.now)).toBeGreaterThanOrEqual(target.getTime());
    expect(Date.parse(to.now) - target.getTime()).toBeLessThan(2_000);
    expect((await clockOf(org)).advanced_by_seconds).toBe(to.advanced_by_seconds);

    const events = await h.sql<{ data: { org_id: string; now: string; advanced_by_seconds: number } }[]>`
      select payload -> 'data' as data from ledger.outbox where org_id = ${org} and type = 'sandbox_clock.advanced' order by created_at, id`;
    expect(events.map((e) => e.data.advanced_by_seconds)).toEqual([3 * DAY, to.advanced_by_seconds]);
    expect(events[1]?.data.org_id).toBe(org);
    expect(events[1]?.data.now).toBe(to.now);
  });

  it("refuses a time before the clock's now, and live keys", async () => {
    const org = newOrg();
    ok(await h.call("advanceSandboxClock", authFor(org), { body: { by_seconds: 2 * DAY } }));
    const back = err(await h.call("advanceSandboxClock", authFor(org), { body: { to: new Date(Date.now() + DAY * 1000).toISOString() } }));
    expect(back.code).toBe("clock_backwards");
    expect((await clockOf(org)).advanced_by_seconds).toBe(2 * DAY);
    expect(err(await h.call("getSandboxClock", authFor(org, true))).code).toBe("sandbox_only");
    expect(err(await h.call("advanceSandboxClock", authFor(org, true), { body: { by_seconds: 60 } })).code).toBe("sandbox_only");
    expect(err(await h.call("advanceSandboxClock", authFor(org), { body: { by_seconds: 60, to: new Date().toISOString() } })).code).toBe("validation_error");
    const events = await h.sql`select 1 from ledger.outbox where org_id = ${org} and type = 'sandbox_clock.advanced'`;
    expect(events.length).toBe(1);
  });

  it("a sandbox hold becomes ready when the clock passes hold_until; the same org's live hold does not", async () => {
    const org = newOrg();
    const holdUntil = new Date(Date.now() + 3 * DAY * 1000).toISOString();
    const ids: Record<string, string> = {};
    for (const livemode of [false, true]) {
      const t = { orgId: org, livemode };
      await createParticipant(h.deps, t, { participant_id: "c1" });
      ok(
        await h.postRpc({
          org_id: org,
          livemode,
          kind: "sale",
          reference_id: "s1",
          postings: [{ debit: { system: "platform_cash" }, credit: { participant_id: "c1" }, amount: 500 }],
        }),
      );
      const hold = ok(
        await h.call("createHold", authFor(org, livemode), { body: { participant_id: "c1", amount: 200, reference_id: "h1", hold_until: holdUntil } }),
      );
      ids[String(livemode)] = (hold.body["hold"] as { id: string }).id;
    }
    const sandboxHold = ids["false"] ?? "";
    expect(err(await h.call("releaseHold", authFor(org), { params: { hold_id: sandboxHold } })).code).toBe("hold_not_ready");
    ok(await h.call("advanceSandboxClock", authFor(org), { body: { by_seconds: 3 * DAY + 60 } }));
    // The replica reads the advance within a second (the kit's clock).
    await waitFor(async () => h.svc.clock.advancedSeconds(org) > 0, { timeoutMs: 5_000 });
    const ready = ok(await h.call("listHolds", authFor(org), { query: { ready_only: true } })).body["holds"] as { id: string }[];
    expect(ready.map((x) => x.id)).toEqual([sandboxHold]);
    ok(await h.call("releaseHold", authFor(org), { params: { hold_id: sandboxHold } }));
    expect(err(await h.call("releaseHold", authFor(org, true), { params: { hold_id: ids["true"] ?? "" } })).code).toBe("hold_not_ready");
  });
});
