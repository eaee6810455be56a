// Proves reserves: a 10 % 30-day rolling reserve holds 800 of a 10,000 sale (creator share 8,000) in the sale's
// own posting and releases it exactly on day 30 by the sandbox clock, to the cent; a fixed reserve keeps its amount
// out of the payable balance; a change applies to new sales only; the snapshot shows both figures.
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

type Snapshot = {
  ledger_balance_cents: number;
  held_amount_cents: number;
  available_balance_cents: number;
  reserved_amount_cents: number;
  payable_balance_cents: number;
  holds: { hold_id: string; amount_cents: number; reason: string; release_date: string }[];
};

async function snapshot(org: string): Promise<Snapshot> {
  return ok(await h.call("getParticipant", authFor(org), { params: { participant_id: "c1" } })).body["participant"] as Snapshot;
}

async function sale(org: string, ref: string, amount: number, extra: Record<string, unknown> = {}) {
  return ok(await h.call("recordSale", authFor(org), { body: { reference_id: ref, creator_id: "c1", amount, creator_percent: 80, ...extra } })).body;
}

async function setReserve(org: string, body: Record<string, unknown>) {
  return ok(await h.call("putReserve", authFor(org), { params: { participant_id: "c1" }, body })).body["reserve"] as Record<string, unknown>;
}

describe("reserves", () => {
  it("a 10 % 30-day rolling reserve holds 800 of a 10,000 sale and releases it exactly on day 30 by the sandbox clock", async () => {
    const org = newOrg();
    await createParticipant(h.deps, { orgId: org, livemode: false }, { participant_id: "c1" });
    expect(ok(await h.call("getReserve", authFor(org), { params: { participant_id: "c1" } })).body["reserve"]).toMatchObject({ type: "none" });
    expect(await setReserve(org, { type: "rolling", percent: 10, days: 30 })).toMatchObject({ participant_id: "c1", type: "rolling", percent: 10, days: 30 });

    const before = Date.now();
    const s = await sale(org, "sale-1", 10_000);
    expect(s["reserve_hold"]).toMatchObject({ amount_cents: 800 });
    expect(s["hold_id"]).toBeNull();
    const snap = await snapshot(org);
    expect(snap).toMatchObject({
      ledger_balance_cents: 8_000,
      held_amount_cents: 800,
      available_balance_cents: 7_200,
      reserved_amount_cents: 800,
      payable_balance_cents: 7_200,
    });
    const [hold] = snap.holds;
    expect(hold).toMatchObject({ amount_cents: 800, reason: "reserve" });
    const releaseAt = Date.parse(hold?.release_date ?? "");
    expect(releaseAt - before).toBeGreaterThanOrEqual(30 * DAY * 1000);
    expect(releaseAt - Date.now()).toBeLessThanOrEqual(30 * DAY * 1000);
    // The hold and the sale are one transaction.
    const [row] = await h.sql<{ same: boolean; auto_release: boolean }[]>`
      select h.transaction_id = s.transaction_id as same, h.auto_release from ledger.holds h join ledger.sales s
        on s.org_id = h.org_id and s.livemode = h.livemode and s.sale_reference = 'sale-1'
      where h.id = ${hold?.hold_id ?? ""}`;
    expect(row).toEqual({ same: true, auto_release: true });

    // Day 29 (a minute short of the hold's time): still held.
    const toDay29 = new Date(releaseAt - 60_000).toISOString();
    ok(await h.call("advanceSandboxClock", authFor(org), { body: { to: toDay29 } }));
    await waitFor(async () => h.svc.clock.advancedSeconds(org) > 0, { timeoutMs: 5_000 });
    await h.svc.autoRelease.runOnce();
    expect((await snapshot(org)).held_amount_cents).toBe(800);

    // Day 30: released within seconds, to the cent.
    ok(await h.call("advanceSandboxClock", authFor(org), { body: { to: new Date(releaseAt).toISOString() } }));
    await waitFor(async () => (await snapshot(org)).held_amount_cents === 0, { timeoutMs: 10_000 });
    expect(await snapshot(org)).toMatchObject({
      ledger_balance_cents: 8_000,
      available_balance_cents: 8_000,
      reserved_amount_cents: 0,
      payable_balance_cents: 8_000,
    });
    const [released] = await h.sql<{ released_by: string }[]>`
      select payload -> 'data' ->> 'released_by' as released_by from ledger.outbox where org_id = ${org} and type = 'hold.released'`;
    expect(released?.released_by).toBe("schedule");
  });

  it("a replayed sale answers the first result after the reserve changed; a change applies to new sales only", async () => {
    const org = newOrg();
    await createParticipant(h.deps, { orgId: org, livemode: false }, { participant_id: "c1" });
    await setReserve(org, { type: "rolling", percent: 12.5, days: 7 });
    await sale(org, "s1", 1_001); // creator 800 (floor of 800.8), reserve floor(800 × 12.5 %) = 100
    expect((await snapshot(org)).held_amount_cents).toBe(100);
    await setReserve(org, { type: "none" });
    const replay = err(await h.call("recordSale", authFor(org), { body: { reference_id: "s1", creator_id: "c1", amount: 1_001, creator_percent: 80 } }));
    expect(replay.code).toBe("duplicate_reference_id");
    await sale(org, "s2", 1_000);
    const snap = await snapshot(org);
    expect(snap.held_amount_cents).toBe(100);
    expect(snap.reserved_amount_cents).toBe(100);
  });

  it("hold_funds with a rolling reserve holds the creator share once; a fixed reserve keeps its amount out of the payable balance", async () => {
    const org = newOrg();
    await createParticipant(h.deps, { orgId: org, livemode: false }, { participant_id: "c1" });
    await setReserve(org, { type: "rolling", percent: 10, days: 30 });
    const s = await sale(org, "held", 10_000, { hold_funds: true });
    expect(s["hold_id"]).not.toBeNull();
    expect((await snapshot(org)).held_amount_cents).toBe(8_000);

    await setReserve(org, { type: "fixed", amount_cents: 1_500 });
    await sale(org, "free", 5_000);
    const snap = await snapshot(org);
    expect(snap).toMatchObject({
      ledger_balance_cents: 12_000,
      held_amount_cents: 8_000,
      available_balance_cents: 4_000,
      reserved_amount_cents: 2_300,
      payable_balance_cents: 2_500,
    });
    const wallet = ok(await h.call("getWallet", authFor(org), { params: { wallet_id: (snap as unknown as { wallet_id: string }).wallet_id } })).body["wallet"];
    expect(wallet).toMatchObject({ reserved_amount_cents: 2_300, payable_balance_cents: 2_500 });
    expect(err(await h.call("putReserve", authFor(org), { params: { participant_id: "nobody" }, body: { type: "none" } })).code).toBe("participant_not_found");
    expect(err(await h.call("putReserve", authFor(org), { params: { participant_id: "c1" }, body: { type: "rolling", percent: 10 } })).code).toBe(
      "validation_error",
    );
  });

  it("a payout posting keeps a fixed reserve's floor under the wallet lock; its replay answers the first result after the reserve changed", async () => {
    const org = newOrg();
    await createParticipant(h.deps, { orgId: org, livemode: false }, { participant_id: "c1" });
    await sale(org, "s1", 10_000); // creator share 8,000
    await setReserve(org, { type: "fixed", amount_cents: 3_000 });
    const payout = (ref: string, amount: number) => ({
      org_id: org,
      livemode: false,
      kind: "payout",
      reference_id: ref,
      amount,
      metadata: { payout_id: ref, participant_id: "c1", rail: "sandbox" },
      postings: [{ debit: { participant_id: "c1" }, credit: { system: "platform_cash" }, amount }],
      preconditions: [{ wallet: { participant_id: "c1" }, available_gte: amount }],
    });
    // 5,001 is available but would go under the 3,000 floor: refused, nothing moved.
    expect(err(await h.postRpc(payout("payout:over", 5_001))).code).toBe("insufficient_balance");
    expect((await snapshot(org)).ledger_balance_cents).toBe(8_000);
    ok(await h.postRpc(payout("payout:exact", 5_000)));
    expect(await snapshot(org)).toMatchObject({ ledger_balance_cents: 3_000, payable_balance_cents: 0, reserved_amount_cents: 3_000 });
    // The floor is the ledger's, not the caller's: the same request replayed after the reserve changed is a replay.
    await setReserve(org, { type: "fixed", amount_cents: 3_500 });
    expect(ok(await h.postRpc(payout("payout:exact", 5_000))).body["duplicate"]).toBe(true);
  });

  it("a 100 % rolling reserve with hold_funds holds the creator share once, as the reserve", async () => {
    const org = newOrg();
    await createParticipant(h.deps, { orgId: org, livemode: false }, { participant_id: "c1" });
    await setReserve(org, { type: "rolling", percent: 100, days: 1 });
    const s = await sale(org, "all", 10_000, { hold_funds: true });
    expect(s["hold_id"]).toBeNull();
    expect(s["reserve_hold"]).toMatchObject({ amount_cents: 8_000 });
    expect(await snapshot(org)).toMatchObject({ held_amount_cents: 8_000, available_balance_cents: 0, reserved_amount_cents: 8_000, payable_balance_cents: 0 });
  });
});
