// Proves the holds use cases against in-memory ports: which wallet a hold lands on, the request the posting engine
// gets, readiness by the clock, the release transfer's checks, and the answers to a replay and to a lost race.
import { cents, DomainError } from "@treasury/contracts";
import { beforeEach, describe, expect, it } from "vitest";
import { codeOf, FakeLedger, holdRow, participantRow, refusalOf, TENANT, walletRow } from "./fakes.ts";
import { createHold, getHoldsSummary, listHolds, releaseHold } from "./holds.ts";

const BUYER = "00000000-0000-4000-8000-0000000000b1";
const CREATOR = "00000000-0000-4000-8000-0000000000c1";
let f: FakeLedger;

beforeEach(() => {
  f = new FakeLedger();
  f.wallets.set(BUYER, walletRow({ id: BUYER, balance: cents(1_000) }));
  f.wallets.set(CREATOR, walletRow({ id: CREATOR, account_type: "creator_earnings", participant_id: "creator", balance: cents(500) }));
  f.participants.set("creator", participantRow({ participant_id: "creator", wallet_id: CREATOR }));
});

describe("createHold", () => {
  it("holds on the participant's creator wallet and posts one hold with the body's reason and release target", async () => {
    const res = await createHold(f.deps(), TENANT, {
      participant_id: "creator",
      amount: 200,
      reference_id: "h-1",
      hold_reason_code: "dispute",
      release_transfer_to_participant_id: "creator",
    });
    expect(f.posted).toHaveLength(1);
    const req = f.posted[0]?.request;
    expect(req).toMatchObject({ org_id: TENANT.orgId, kind: "hold", reference_id: "h-1", postings: [] });
    expect(req?.holds_create).toEqual([
      expect.objectContaining({ wallet: { wallet_id: CREATOR }, amount: 200, reason_code: "dispute", release_transfer_to_participant_id: "creator" }),
    ]);
    expect(res.hold).toMatchObject({ wallet_id: CREATOR, amount: 200, release_status: "held", ready_for_release: true });
  });

  it("refuses an unknown participant, a wallet of another participant and an unknown release target before posting", async () => {
    expect(await codeOf(createHold(f.deps(), TENANT, { participant_id: "nobody", amount: 1, reference_id: "a" }))).toBe("participant_not_found");
    expect(await codeOf(createHold(f.deps(), TENANT, { participant_id: "creator", wallet_id: BUYER, amount: 1, reference_id: "b" }))).toBe("validation_error");
    expect(await codeOf(createHold(f.deps(), TENANT, { wallet_id: BUYER, amount: 1, reference_id: "c", release_transfer_to_participant_id: "nobody" }))).toBe(
      "participant_not_found",
    );
    expect(await codeOf(createHold(f.deps(), TENANT, { amount: 1, reference_id: "d" }))).toBe("validation_error");
    expect(f.posted).toHaveLength(0);
  });

  it("answers a replay with 409 duplicate_reference_id naming the first hold", async () => {
    const first = await createHold(f.deps(), TENANT, { wallet_id: BUYER, amount: 100, reference_id: "same" });
    const again = await refusalOf(createHold(f.deps(), TENANT, { wallet_id: BUYER, amount: 100, reference_id: "same" }));
    expect([again.code, again.extra?.["hold"]]).toEqual(["duplicate_reference_id", first.hold]);
  });

  it("passes the engine's refusal on", async () => {
    f.refuseNext = new DomainError("insufficient_balance", "Insufficient available balance");
    expect(await codeOf(createHold(f.deps(), TENANT, { wallet_id: BUYER, amount: 5_000, reference_id: "big" }))).toBe("insufficient_balance");
  });
});

describe("releaseHold", () => {
  it("refuses an unknown hold, a released one (with its release) and one held until later by the clock", async () => {
    f.holds.set("h-done", holdRow({ id: "h-done", wallet_id: BUYER, status: "released", release_id: "rel_1", release_transaction_id: "txn_9" }));
    f.holds.set("h-later", holdRow({ id: "h-later", wallet_id: BUYER, hold_until: new Date("2026-03-02T00:00:00Z") }));
    expect(await codeOf(releaseHold(f.deps(), TENANT, "h-none", {}))).toBe("hold_not_found");
    const done = await refusalOf(releaseHold(f.deps(), TENANT, "h-done", {}));
    expect([done.code, done.extra?.["existing_transaction_id"]]).toEqual(["hold_already_released", "txn_9"]);
    expect(await codeOf(releaseHold(f.deps(), TENANT, "h-later", {}))).toBe("hold_not_ready");
    f.now = new Date("2026-03-02T00:00:00Z");
    expect((await releaseHold(f.deps(), TENANT, "h-later", {})).release).toMatchObject({ hold_id: "h-later", status: "released", executed: false });
  });

  it("executes the release transfer only between transferable wallets, in the release's own request", async () => {
    f.holds.set("h-t", holdRow({ id: "h-t", wallet_id: BUYER, amount: cents(300), release_transfer_to_participant_id: "creator" }));
    f.wallets.set(BUYER, walletRow({ id: BUYER, balance: cents(1_000), transferable: false }));
    expect(await codeOf(releaseHold(f.deps(), TENANT, "h-t", { execute_transfer: true }))).toBe("wallet_not_transferable");
    f.wallets.set(BUYER, walletRow({ id: BUYER, balance: cents(1_000) }));
    const res = await releaseHold(f.deps(), TENANT, "h-t", { execute_transfer: true });
    expect(f.posted.at(-1)?.request).toMatchObject({
      kind: "hold_release",
      reference_id: "h-t",
      holds_release: [{ hold_id: "h-t", transfer_executed: true }],
      postings: [{ debit: { wallet_id: BUYER }, credit: { participant_id: "creator" }, amount: 300 }],
    });
    expect(res.release).toMatchObject({ executed: true, transfer_status: "completed" });
  });

  it("answers what a concurrent release did when the engine says the hold was released meanwhile", async () => {
    f.holds.set("h-race", holdRow({ id: "h-race", wallet_id: BUYER }));
    const deps = f.deps();
    deps.poster = {
      post: async () => {
        // The other release committed first.
        f.holds.set("h-race", holdRow({ id: "h-race", wallet_id: BUYER, status: "released", release_id: "rel_x", release_transaction_id: "txn_x" }));
        throw new DomainError("hold_already_released", "Hold h-race was already released");
      },
    };
    const e = await refusalOf(releaseHold(deps, TENANT, "h-race", {}));
    expect([e.code, (e.extra?.["release"] as Record<string, unknown>)["id"]]).toEqual(["hold_already_released", "rel_x"]);
  });
});

describe("hold reads", () => {
  it("lists held holds with readiness as of the clock, and the summary of the store", async () => {
    f.holds.set("h-1", holdRow({ id: "h-1", wallet_id: BUYER, hold_until: new Date("2026-03-05T00:00:00Z") }));
    f.holds.set("h-2", holdRow({ id: "h-2", wallet_id: BUYER, status: "released" }));
    const list = await listHolds(f.deps(), TENANT, {});
    expect(list).toMatchObject({ count: 1, total: 1, limit: 100, offset: 0 });
    expect(list.holds[0]).toMatchObject({ id: "h-1", ready_for_release: false, days_held: 59 });
    f.now = new Date("2026-03-06T00:00:00Z");
    expect((await listHolds(f.deps(), TENANT, {})).holds[0]).toMatchObject({ ready_for_release: true });
    expect(await getHoldsSummary(f.deps(), TENANT)).toEqual({ summary: { total_held: 0, total_ready: 0, count: 2, by_reason: {} } });
  });
});
