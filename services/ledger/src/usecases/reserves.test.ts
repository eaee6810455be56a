// Proves the reserve rules against in-memory ports: the rolling hold's amount in exact cents and its release time
// by the sale's clock, the sale's request with the reserve hold (auto-release, hashed without it), and the snapshot
// figures of a fixed reserve.
import { cents } from "@treasury/contracts";
import { beforeEach, describe, expect, it } from "vitest";
import { FakeLedger, holdRow, participantRow, TENANT, walletRow } from "./fakes.ts";
import { getReserve, putReserve, reserveFigures, reserveHoldOf } from "./reserves.ts";
import { recordSale } from "./sale.ts";

const CREATOR = "00000000-0000-4000-8000-0000000000c1";
let f: FakeLedger;

beforeEach(() => {
  f = new FakeLedger();
  f.wallets.set(CREATOR, walletRow({ id: CREATOR, account_type: "creator_earnings", participant_id: "c1" }));
  f.participants.set("c1", participantRow({ participant_id: "c1", wallet_id: CREATOR }));
});

describe("reserves", () => {
  it("a rolling reserve holds floor(creator share × percent / 100), released days after the sale's clock time", () => {
    const at = new Date("2026-03-01T12:00:00Z");
    const r = { participant_id: "c1", reserve_type: "rolling" as const, percent_bps: 1_250, days: 30, amount_cents: null, updated_at: at };
    expect(reserveHoldOf(r, 8_000, at)).toEqual({ amount: 1_000, holdUntil: new Date("2026-03-31T12:00:00Z") });
    expect(reserveHoldOf(r, 799, at)?.amount).toBe(99);
    expect(reserveHoldOf(r, 7, at)).toBeUndefined();
    expect(reserveHoldOf({ ...r, reserve_type: "fixed", percent_bps: null, days: null, amount_cents: cents(5) }, 8_000, at)).toBeUndefined();
  });

  it("the sale posts the reserve hold in its own request, auto-released, and is hashed without it", async () => {
    await putReserve(f.deps(), TENANT, "c1", { type: "rolling", percent: 10, days: 30 });
    expect((await getReserve(f.deps(), TENANT, "c1")).reserve).toMatchObject({ type: "rolling", percent: 10, days: 30, amount_cents: null });
    await recordSale(f.deps(), TENANT, { reference_id: "s1", creator_id: "c1", amount: 10_000, creator_percent: 80 });
    const [posted] = f.posted;
    expect(posted?.request.holds_create).toEqual([
      expect.objectContaining({
        wallet: { participant_id: "c1" },
        amount: 800,
        reason_code: "reserve",
        reference_id: "reserve:s1",
        hold_until: "2026-03-31T12:00:00.000Z",
      }),
    ]);
    expect(posted?.hooks?.autoRelease).toEqual([0]);
    expect(posted?.hooks?.hashAs).toMatchObject({ holds_create: [] });
    expect(posted?.request.sale?.hold_index).toBeUndefined();
  });

  it("a fixed reserve counts in reserved and comes off the payable balance, never below zero", () => {
    const r = { participant_id: "c1", reserve_type: "fixed" as const, percent_bps: null, days: null, amount_cents: cents(1_500), updated_at: new Date() };
    const holds = [holdRow({ id: "h1", wallet_id: CREATOR, amount: cents(300), hold_reason_code: "reserve" }), holdRow({ id: "h2", wallet_id: CREATOR })];
    expect(reserveFigures(r, holds, 4_000)).toEqual({ reserved_amount_cents: 1_800, payable_balance_cents: 2_500 });
    expect(reserveFigures(r, [], 1_000)).toEqual({ reserved_amount_cents: 1_500, payable_balance_cents: 0 });
    expect(reserveFigures(undefined, holds, 1_000)).toEqual({ reserved_amount_cents: 300, payable_balance_cents: 1_000 });
  });
});
