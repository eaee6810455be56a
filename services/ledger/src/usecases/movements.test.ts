// Proves the wallet money paths against in-memory ports: each builds one posting request (from sandbox funding, to
// the buyer, between two wallets), refuses what the wallet does not allow before posting, passes the engine's
// refusal on, and answers a replay with 409 duplicate_reference_id carrying the first movement.
import { cents, type Tenant } from "@treasury/contracts";
import { beforeEach, describe, expect, it } from "vitest";
import { codeOf, FakeLedger, refusalOf, TENANT, walletRow } from "./fakes.ts";
import { depositToWallet, transferBetweenWallets, withdrawFromWallet } from "./movements.ts";

const A = "00000000-0000-4000-8000-00000000000a";
const B = "00000000-0000-4000-8000-00000000000b";
const CREATOR = "00000000-0000-4000-8000-0000000000c1";
const LIVE: Tenant = { ...TENANT, livemode: true };
let f: FakeLedger;

beforeEach(() => {
  f = new FakeLedger();
  f.wallets.set(A, walletRow({ id: A, owner_id: "a", balance: cents(1_000) }));
  f.wallets.set(B, walletRow({ id: B, owner_id: "b" }));
  f.wallets.set(CREATOR, walletRow({ id: CREATOR, account_type: "creator_earnings", participant_id: "creator", topup_supported: false }));
});

describe("depositToWallet", () => {
  it("posts from sandbox funding and answers the wallet's balance after", async () => {
    const res = await depositToWallet(f.deps(), TENANT, B, { amount: 250, reference_id: "d-1", description: "top-up" });
    expect(f.posted[0]?.request).toMatchObject({
      kind: "wallet_topup",
      reference_id: "d-1",
      description: "top-up",
      postings: [{ debit: { system: "sandbox_funding" }, credit: { wallet_id: B }, amount: 250 }],
    });
    expect(res.topup).toEqual({ wallet_id: B, owner_id: "b", transaction_id: "txn_1", amount: 250, balance: 250, available_balance: 250 });
  });

  it("refuses a wallet without top-ups and any live top-up before posting", async () => {
    expect(await codeOf(depositToWallet(f.deps(), TENANT, CREATOR, { amount: 1, reference_id: "x" }))).toBe("wallet_not_topupable");
    expect(await codeOf(depositToWallet(f.deps(), LIVE, B, { amount: 1, reference_id: "y" }))).toBe("topup_requires_checkout");
    expect(f.posted).toHaveLength(0);
  });

  it("answers a replay with the first top-up under duplicate_reference_id, and moves the money once", async () => {
    const first = await depositToWallet(f.deps(), TENANT, B, { amount: 250, reference_id: "d-1" });
    const e = await refusalOf(depositToWallet(f.deps(), TENANT, B, { amount: 250, reference_id: "d-1" }));
    expect([e.code, e.extra?.["existing_transaction_id"], e.extra?.["topup"]]).toEqual(["duplicate_reference_id", "txn_1", first.topup]);
    expect(f.wallets.get(B)?.balance).toBe(250);
  });
});

describe("withdrawFromWallet", () => {
  it("pays out to the simulated card in sandbox and from platform cash in live", async () => {
    await withdrawFromWallet(f.deps(), TENANT, A, { amount: 100, reference_id: "w-1" });
    f.wallets.set(A, walletRow({ id: A, owner_id: "a", livemode: true, balance: cents(1_000) }));
    await withdrawFromWallet(f.deps(), LIVE, A, { amount: 100, reference_id: "w-2" });
    expect(f.posted.map((p) => p.request.postings[0]?.credit)).toEqual([{ system: "sandbox_funding" }, { system: "platform_cash" }]);
  });

  it("refuses creator earnings and unredeemable wallets, and passes the engine's refusal on without answering", async () => {
    expect(await codeOf(withdrawFromWallet(f.deps(), TENANT, CREATOR, { amount: 1, reference_id: "x" }))).toBe("wallet_withdrawal_not_supported");
    f.wallets.set(B, walletRow({ id: B, redeemable: false }));
    expect(await codeOf(withdrawFromWallet(f.deps(), TENANT, B, { amount: 1, reference_id: "y" }))).toBe("wallet_not_redeemable");
    expect(await codeOf(withdrawFromWallet(f.deps(), TENANT, A, { amount: 5_000, reference_id: "z" }))).toBe("insufficient_balance");
    expect(f.wallets.get(A)?.balance).toBe(1_000);
  });
});

describe("transferBetweenWallets", () => {
  it("moves money between two wallets named by wallet or participant id", async () => {
    const res = await transferBetweenWallets(f.deps(), TENANT, { amount: 400, reference_id: "t-1", from_wallet_id: A, to_participant_id: "creator" });
    expect(f.posted[0]?.request.postings).toEqual([{ debit: { wallet_id: A }, credit: { wallet_id: CREATOR }, amount: 400 }]);
    expect(res.transfer).toMatchObject({ from_wallet_id: A, to_wallet_id: CREATOR, amount: 400, from_balance: 600, to_balance: 400 });
  });

  it("refuses a transfer to itself, a wallet that does not transfer, an unknown participant and a missing end", async () => {
    expect(await codeOf(transferBetweenWallets(f.deps(), TENANT, { amount: 1, reference_id: "a", from_wallet_id: A, to_wallet_id: A }))).toBe(
      "transfer_to_self",
    );
    f.wallets.set(B, walletRow({ id: B, transferable: false }));
    expect(await codeOf(transferBetweenWallets(f.deps(), TENANT, { amount: 1, reference_id: "b", from_wallet_id: A, to_wallet_id: B }))).toBe(
      "wallet_not_transferable",
    );
    expect(await codeOf(transferBetweenWallets(f.deps(), TENANT, { amount: 1, reference_id: "c", from_wallet_id: A, to_participant_id: "nobody" }))).toBe(
      "participant_not_found",
    );
    expect(await codeOf(transferBetweenWallets(f.deps(), TENANT, { amount: 1, reference_id: "d", from_wallet_id: A }))).toBe("validation_error");
    expect(f.posted).toHaveLength(0);
  });
});
