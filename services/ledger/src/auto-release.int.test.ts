// Proves hold auto-release: due auto_release holds are released by the ledger's leader job exactly once with two
// replicas running it, in requests of many holds each, with `hold.released` saying `released_by: "schedule"`
// (`"api"` for a client's release); a sandbox hold due in three days is released within seconds of advancing the
// org's clock three days, and not before.
import { allowRisk, waitFor } from "@treasury/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildLedger, type LedgerService } from "./service.ts";
import { authFor, err, newOrg, ok, startLedger, type LedgerHarness } from "./test-support.ts";
import { createParticipant } from "./usecases/participants.ts";

let h: LedgerHarness;
let second: LedgerService;

beforeAll(async () => {
  h = await startLedger();
  second = await buildLedger(h.env.env("ledger"), { risk: allowRisk });
  await second.start();
});
afterAll(async () => {
  await second?.stop();
  await h?.close();
});

const DAY = 86_400;

async function fundedCreator(org: string, amount: number, livemode = false): Promise<void> {
  await createParticipant(h.deps, { orgId: org, livemode }, { participant_id: "c1" });
  ok(
    await h.postRpc({
      org_id: org,
      livemode,
      kind: "sale",
      reference_id: `fund-${livemode}`,
      postings: [{ debit: { system: "platform_cash" }, credit: { participant_id: "c1" }, amount }],
    }),
  );
}

async function createHold(org: string, ref: string, holdUntil: Date, autoRelease = true): Promise<string> {
  const body = { participant_id: "c1", amount: 10, reference_id: ref, hold_until: holdUntil.toISOString(), ...(autoRelease ? { auto_release: true } : {}) };
  return (ok(await h.call("createHold", authFor(org), { body })).body["hold"] as { id: string }).id;
}

async function holdStatus(id: string): Promise<string | undefined> {
  const [row] = await h.sql<{ status: string }[]>`select status from ledger.holds where id = ${id}`;
  return row?.status;
}

async function releasedEvents(org: string): Promise<{ hold_id: string; released_by?: string }[]> {
  const rows = await h.sql<{ data: { hold_id: string; released_by?: string } }[]>`
    select payload -> 'data' as data from ledger.outbox where org_id = ${org} and type = 'hold.released'`;
  return rows.map((r) => r.data);
}

describe("hold auto-release", () => {
  it("releases due holds once with two replicas, many holds per request, released_by schedule", async () => {
    const org = newOrg();
    await fundedCreator(org, 10_000);
    const soon = new Date(Date.now() + 1_500);
    const ids = await Promise.all(Array.from({ length: 45 }, (_, i) => createHold(org, `auto-${i}`, soon)));
    const manual = await createHold(org, "manual", soon, false);
    await waitFor(async () => (await Promise.all(ids.map(holdStatus))).every((s) => s === "released"), { timeoutMs: 20_000 });
    // Both replicas run passes meanwhile; nothing more happens.
    await Promise.all([h.svc.autoRelease.runOnce(), second.autoRelease.runOnce()]);

    const events = await releasedEvents(org);
    expect(events.map((e) => e.hold_id).sort()).toEqual([...ids].sort());
    expect(new Set(events.map((e) => e.released_by))).toEqual(new Set(["schedule"]));
    const txns = await h.sql<{ n: string }[]>`
      select count(*) as n from ledger.transactions where org_id = ${org} and kind = 'hold_auto_release'`;
    expect(Number(txns[0]?.n)).toBeLessThanOrEqual(Math.ceil(45 / 20) + 1);
    const [wallet] = await h.sql<{ held_amount: string }[]>`
      select held_amount from ledger.accounts where org_id = ${org} and participant_id = 'c1' and is_wallet`;
    expect(Number(wallet?.held_amount)).toBe(10);
    // A hold without auto_release waits for its client, whose release says so.
    expect(await holdStatus(manual)).toBe("held");
    ok(await h.call("releaseHold", authFor(org), { params: { hold_id: manual } }));
    expect((await releasedEvents(org)).find((e) => e.hold_id === manual)?.released_by).toBe("api");
  });

  it("a sandbox hold due in three days releases within seconds of advancing the clock three days, not before", async () => {
    const org = newOrg();
    await fundedCreator(org, 1_000);
    const id = await createHold(org, "three-days", new Date(Date.now() + 3 * DAY * 1000));
    ok(await h.call("advanceSandboxClock", authFor(org), { body: { by_seconds: 2 * DAY } }));
    await waitFor(async () => h.svc.clock.advancedSeconds(org) === 2 * DAY && second.clock.advancedSeconds(org) === 2 * DAY, { timeoutMs: 5_000 });
    await Promise.all([h.svc.autoRelease.runOnce(), second.autoRelease.runOnce()]);
    expect(await holdStatus(id)).toBe("held");
    expect(err(await h.call("releaseHold", authFor(org), { params: { hold_id: id } })).code).toBe("hold_not_ready");

    const advancedAt = Date.now();
    ok(await h.call("advanceSandboxClock", authFor(org), { body: { by_seconds: DAY } }));
    await waitFor(async () => (await holdStatus(id)) === "released", { timeoutMs: 10_000 });
    expect(Date.now() - advancedAt).toBeLessThan(10_000);
    expect((await releasedEvents(org)).map((e) => [e.hold_id, e.released_by])).toEqual([[id, "schedule"]]);
  });

  it("a live hold runs on real time whatever the org's sandbox clock says", async () => {
    const org = newOrg();
    await fundedCreator(org, 1_000, true);
    const body = { participant_id: "c1", amount: 10, reference_id: "live", hold_until: new Date(Date.now() + DAY * 1000).toISOString(), auto_release: true };
    const id = (ok(await h.call("createHold", authFor(org, true), { body })).body["hold"] as { id: string; auto_release: boolean }).id;
    ok(await h.call("advanceSandboxClock", authFor(org), { body: { by_seconds: 2 * DAY } }));
    await waitFor(async () => h.svc.clock.advancedSeconds(org) > 0 && second.clock.advancedSeconds(org) > 0, { timeoutMs: 5_000 });
    await Promise.all([h.svc.autoRelease.runOnce(), second.autoRelease.runOnce()]);
    expect(await holdStatus(id)).toBe("held");
  });

  it("auto_release needs hold_until, and is part of what a replay must match", async () => {
    const org = newOrg();
    await fundedCreator(org, 1_000);
    expect(err(await h.call("createHold", authFor(org), { body: { participant_id: "c1", amount: 10, reference_id: "x", auto_release: true } })).code).toBe(
      "validation_error",
    );
    const until = new Date(Date.now() + DAY * 1000).toISOString();
    const body = { participant_id: "c1", amount: 10, reference_id: "r", hold_until: until, auto_release: true };
    const hold = ok(await h.call("createHold", authFor(org), { body })).body["hold"] as { auto_release: boolean };
    expect(hold.auto_release).toBe(true);
    expect(err(await h.call("createHold", authFor(org), { body })).code).toBe("duplicate_reference_id");
    expect(err(await h.call("createHold", authFor(org), { body: { ...body, auto_release: false } })).code).toBe("idempotency_conflict");
  });
});
