// Proves the participant and wallet use cases against in-memory ports: reads (one, a page, or many by id) present
// each participant with its own active holds, malformed and foreign wallet ids are not found, creation is idempotent on its key and refuses a
// different request under it, and creator wallets are made only with their participant.
import { cents } from "@treasury/contracts";
import { beforeEach, describe, expect, it } from "vitest";
import { codeOf, FakeLedger, holdRow, participantRow, refusalOf, TENANT, walletRow } from "./fakes.ts";
import { createParticipant, getParticipant, listParticipants, participantBalances } from "./participants.ts";
import { createWallet, getWallet, listWalletEntries, loadWallet } from "./wallets.ts";

const W1 = "00000000-0000-4000-8000-000000000001";
const W2 = "00000000-0000-4000-8000-000000000002";
let f: FakeLedger;

beforeEach(() => {
  f = new FakeLedger();
  f.wallets.set(W1, walletRow({ id: W1, account_type: "creator_earnings", participant_id: "p1", balance: cents(900) }));
  f.wallets.set(W2, walletRow({ id: W2, account_type: "creator_earnings", participant_id: "p2", balance: cents(50) }));
  f.participants.set("p1", participantRow({ participant_id: "p1", wallet_id: W1, balance: cents(900), held_amount: cents(300) }));
  f.participants.set("p2", participantRow({ participant_id: "p2", wallet_id: W2, balance: cents(50) }));
  f.holds.set("h1", holdRow({ id: "h1", wallet_id: W1, amount: cents(200) }));
  f.holds.set("h2", holdRow({ id: "h2", wallet_id: W1, amount: cents(100) }));
  f.holds.set("h3", holdRow({ id: "h3", wallet_id: W2, amount: cents(10), status: "released" }));
});

describe("participant reads", () => {
  it("presents a participant's balances and its active holds", async () => {
    const p = await getParticipant(f.deps(), TENANT, "p1");
    expect(p).toMatchObject({ id: "p1", wallet_id: W1, ledger_balance_cents: 900, held_amount_cents: 300, available_balance_cents: 600 });
    expect((p["holds"] as { hold_id: string }[]).map((h) => h.hold_id)).toEqual(["h1", "h2"]);
    expect(await codeOf(getParticipant(f.deps(), TENANT, "nobody"))).toBe("participant_not_found");
  });

  it("lists a page of participants, each with only its own holds, reading the holds once", async () => {
    const page = await listParticipants(f.deps(), TENANT, { limit: 10, offset: 0 });
    expect(page).toMatchObject({ total: 2, limit: 10, offset: 0 });
    expect(page.participants.map((p) => [p["id"], (p["holds"] as unknown[]).length])).toEqual([
      ["p1", 2],
      ["p2", 0],
    ]);
    expect(f.calls.filter((c) => c === "holds.activeOfWallets")).toHaveLength(1);
  });

  it("reads many participants' balances at once, each as getParticipant presents it, leaving out unknown ids", async () => {
    f.calls.length = 0;
    const many = await participantBalances(f.deps(), TENANT, ["p2", "nobody", "p1"]);
    expect(many.map((p) => p["id"]).sort()).toEqual(["p1", "p2"]);
    for (const p of many) expect(p).toEqual(await getParticipant(f.deps(), TENANT, String(p["id"])));
    expect(many.find((p) => p["id"] === "p1")).toMatchObject({ available_balance_cents: 600, payable_balance_cents: 600 });
    expect(f.calls.slice(0, 3).sort()).toEqual(["holds.activeOfWallets", "participants.findMany", "reserves.find"]);
    expect(await participantBalances(f.deps(), TENANT, ["nobody"])).toEqual([]);
  });
});

describe("wallet reads", () => {
  it("finds a wallet by id; a malformed id is not found without a read, as is another org's wallet", async () => {
    // A creator wallet also answers its reserve figures (none set: nothing reserved, all of it payable).
    expect(await getWallet(f.deps(), TENANT, W1)).toMatchObject({
      id: W1,
      wallet_type: "creator_earnings",
      available_balance: 900,
      scope_type: "participant",
      reserved_amount_cents: 0,
      payable_balance_cents: 900,
    });
    f.calls.length = 0;
    expect(await codeOf(loadWallet(f.deps(), TENANT, "not-a-uuid"))).toBe("wallet_not_found");
    expect(f.calls).toEqual([]);
    expect(await codeOf(listWalletEntries(f.deps(), TENANT, "00000000-0000-4000-8000-0000000000ff", {}))).toBe("wallet_not_found");
  });
});

describe("creation", () => {
  it("answers the owner's existing consumer wallet unchanged (created: false), and refuses a creator wallet without its participant", async () => {
    const first = await createWallet(f.deps(), TENANT, { owner_id: "buyer", redeemable: true });
    expect(first).toMatchObject({ created: true, wallet: { owner_id: "buyer", redeemable: true, wallet_type: "consumer_credit" } });
    const again = await createWallet(f.deps(), TENANT, { owner_id: "buyer", redeemable: false, name: "other" });
    expect(again).toEqual({ created: false, wallet: first.wallet });
    expect(await codeOf(createWallet(f.deps(), TENANT, { owner_id: "x", wallet_type: "creator_earnings" }))).toBe("creator_earnings_requires_participant");
  });

  it("creates a participant with its creator wallet in one transaction; the same fields again answer it, other fields are refused", async () => {
    const made = await createParticipant(f.deps(), TENANT, { participant_id: "p3", display_name: "Three", default_split_percent: 70 });
    expect(made).toMatchObject({ created: true, participant: { id: "p3", created: true } });
    const wallet = [...f.wallets.values()].find((w) => w.participant_id === "p3");
    expect(wallet).toMatchObject({ account_type: "creator_earnings", name: "Three", transferable: true });
    const replay = await createParticipant(f.deps(), TENANT, { participant_id: "p3", display_name: "Three", default_split_percent: 70 });
    expect(replay.created).toBe(false);
    const other = await refusalOf(createParticipant(f.deps(), TENANT, { participant_id: "p3", display_name: "Someone else" }));
    expect([other.code, (other.extra?.["participant"] as Record<string, unknown>)["id"]]).toEqual(["participant_already_exists", "p3"]);
  });
});
