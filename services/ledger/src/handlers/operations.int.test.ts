// Proves the ledger's public operations through real RPC (NATS → handler → PostgreSQL): fields, statuses,
// named keys, replays and every error code docs/api.md assign them.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkInvariants } from "../verify/invariants.ts";
import { authFor, err, errorCode, newOrg, ok, startLedger, type LedgerHarness } from "../test-support.ts";

let h: LedgerHarness;

beforeAll(async () => {
  h = await startLedger();
});
afterAll(async () => {
  await h?.close();
});

async function expectInvariants(): Promise<void> {
  const report = await checkInvariants(h.env.adminSql);
  expect(report.violations).toEqual([]);
  expect(report.ok).toBe(true);
}

describe("participants", () => {
  it("create is idempotent on participant_id: 201 created, 200 replay, 409 with different fields", async () => {
    // Proves docs/api.md, Participants and wallets participant create semantics, and that the creator wallet comes with it.
    const auth = authFor(newOrg());
    const body = {
      participant_id: "creator_a",
      display_name: "Ada",
      email: "ada@example.com",
      default_split_percent: 80.5,
      tax_info: { tax_id_type: "ssn", tax_id: "123-45-6789", date_of_birth: "1990-01-01" },
    };
    const first = ok(await h.call("createParticipant", auth, { body }));
    expect(first.status).toBe(201);
    const p = first.body["participant"] as Record<string, unknown>;
    expect(p).toMatchObject({ id: "creator_a", created: true, display_name: "Ada", email: "ada@example.com", default_split_percent: 80.5 });
    expect(p["account_id"]).toMatch(/^[0-9a-f-]{36}$/);
    expect(p["wallet_id"]).toMatch(/^[0-9a-f-]{36}$/);
    const [tax] = await h.env.adminSql`select tax_info from ledger.participants where participant_id = 'creator_a' and org_id = ${auth.org_id}`;
    expect(tax?.["tax_info"]).toEqual({ tax_id_type: "ssn", tax_id_last4: "6789" });

    const replay = ok(await h.call("createParticipant", auth, { body }));
    expect(replay.status).toBe(200);
    expect(replay.body["participant"]).toMatchObject({ id: "creator_a", created: false, wallet_id: p["wallet_id"] });

    const conflict = err(await h.call("createParticipant", auth, { body: { ...body, display_name: "Other" } }));
    expect(conflict.code).toBe("participant_already_exists");
    expect(conflict.extra?.["participant"]).toMatchObject({ id: "creator_a", display_name: "Ada" });

    const wallet = ok(await h.call("getWallet", auth, { params: { wallet_id: String(p["wallet_id"]) } })).body["wallet"];
    expect(wallet).toMatchObject({
      wallet_type: "creator_earnings",
      owner_id: "creator_a",
      participant_id: "creator_a",
      account_type: "creator_balance",
      scope_type: "participant",
      redeemable: true,
      transferable: true,
      topup_supported: false,
      payout_supported: true,
      balance: 0,
    });
    await expectInvariants();
  });

  it("concurrent creates of one participant make one participant and one wallet", async () => {
    // Proves the creation race is settled by the database's unique key, not by a read-then-write.
    const auth = authFor(newOrg());
    const replies = await Promise.all(Array.from({ length: 20 }, () => h.call("createParticipant", auth, { body: { participant_id: "racer" } })));
    expect(replies.map((r) => ok(r).status).sort((x, y) => x - y)).toEqual([...Array<number>(19).fill(200), 201]);
    const [n] = await h.env.adminSql`select count(*)::int as n from ledger.accounts where org_id = ${auth.org_id}`;
    expect(n?.["n"]).toBe(1);
    await expectInvariants();
  });

  it("get and list answer the balance snapshot and active holds; unknown is 404", async () => {
    // Proves participant rows carry ledger/held/available cents and their holds.
    const auth = authFor(newOrg());
    const p = ok(await h.call("createParticipant", auth, { body: { participant_id: "c1", display_name: "C" } })).body["participant"] as Record<string, unknown>;
    ok(await h.call("createParticipant", auth, { body: { participant_id: "c2" } }));
    const payer = await fundedConsumer(auth, "payer", 1000);
    ok(await h.call("transferBetweenWallets", auth, { body: { amount: 600, reference_id: "t1", from_wallet_id: payer, to_participant_id: "c1" } }));
    ok(await h.call("createHold", auth, { body: { participant_id: "c1", amount: 250, reference_id: "h1", hold_reason_code: "dispute_window" } }));
    const got = ok(await h.call("getParticipant", auth, { params: { participant_id: "c1" } })).body["participant"] as Record<string, unknown>;
    expect(got).toMatchObject({ id: "c1", wallet_id: p["wallet_id"], ledger_balance_cents: 600, held_amount_cents: 250, available_balance_cents: 350 });
    expect(got["holds"]).toEqual([expect.objectContaining({ amount_cents: 250, reason: "dispute_window", status: "held", release_date: null })]);
    const list = ok(await h.call("listParticipants", auth)).body;
    expect(list).toMatchObject({ total: 2, limit: 25, offset: 0 });
    expect((list["participants"] as unknown[]).length).toBe(2);
    expect(err(await h.call("getParticipant", auth, { params: { participant_id: "nobody" } })).code).toBe("participant_not_found");
    await expectInvariants();
  });
});

async function fundedConsumer(
  auth: ReturnType<typeof authFor>,
  owner: string,
  amount: number,
  flags: { redeemable?: boolean; transferable?: boolean } = { redeemable: true, transferable: true },
): Promise<string> {
  const w = ok(await h.call("createWallet", auth, { body: { owner_id: owner, ...flags } })).body["wallet"] as Record<string, unknown>;
  const id = String(w["id"]);
  if (amount > 0) ok(await h.call("depositToWallet", auth, { params: { wallet_id: id }, body: { amount, reference_id: `fund-${owner}` } }));
  return id;
}

describe("wallets", () => {
  it("createWallet upserts consumer wallets on owner_id and refuses creator_earnings", async () => {
    // Proves wallet create (docs/api.md, Wallets): {created, wallet}, defaults, upsert, 409 creator_earnings_requires_participant.
    const auth = authFor(newOrg());
    const first = ok(await h.call("createWallet", auth, { body: { owner_id: "buyer-1", name: "Buyer" } }));
    expect(first.status).toBe(201);
    expect(first.body["created"]).toBe(true);
    expect(first.body["wallet"]).toMatchObject({
      object: "wallet",
      wallet_type: "consumer_credit",
      scope_type: "customer",
      account_type: "user_wallet",
      currency: "USD",
      status: "active",
      owner_id: "buyer-1",
      name: "Buyer",
      redeemable: false,
      transferable: false,
      topup_supported: true,
      payout_supported: false,
      balance: 0,
      held_amount: 0,
      available_balance: 0,
    });
    const w = first.body["wallet"] as Record<string, unknown>;
    expect(w["wallet_id"]).toBe(w["id"]);
    const again = ok(await h.call("createWallet", auth, { body: { owner_id: "buyer-1", redeemable: true } }));
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ created: false, wallet: { id: w["id"], redeemable: false } });
    const refused = err(await h.call("createWallet", auth, { body: { owner_id: "x", wallet_type: "creator_earnings" } }));
    expect(refused.code).toBe("creator_earnings_requires_participant");
    await expectInvariants();
  });

  it("lists with filters and paging, and lists entries newest first", async () => {
    // Proves listWallets filters/total and listWalletEntries' entry fields and order.
    const auth = authFor(newOrg());
    const a = await fundedConsumer(auth, "owner-a", 500);
    await fundedConsumer(auth, "owner-b", 0);
    ok(await h.call("createParticipant", auth, { body: { participant_id: "p1" } }));
    ok(await h.call("withdrawFromWallet", auth, { params: { wallet_id: a }, body: { amount: 200, reference_id: "wd-1", description: "cash out" } }));
    const all = ok(await h.call("listWallets", auth)).body;
    expect(all).toMatchObject({ total: 3, limit: 25, offset: 0 });
    const consumers = ok(await h.call("listWallets", auth, { query: { wallet_type: "consumer_credit", limit: 1, offset: 1 } })).body;
    expect(consumers).toMatchObject({ total: 2, limit: 1, offset: 1 });
    expect((consumers["wallets"] as unknown[]).length).toBe(1);
    const byOwner = ok(await h.call("listWallets", auth, { query: { owner_id: "p1", wallet_type: "creator_earnings" } })).body;
    expect(byOwner["total"]).toBe(1);
    const entries = ok(await h.call("listWalletEntries", auth, { params: { wallet_id: a } })).body;
    expect(entries).toMatchObject({ total: 2, limit: 25, offset: 0, wallet: { id: a, balance: 300 } });
    expect(entries["entries"]).toEqual([
      expect.objectContaining({
        entry_type: "debit",
        amount: 200,
        reference_id: "wd-1",
        transaction_type: "wallet_withdrawal",
        description: "cash out",
        balance_after: 300,
      }),
      expect.objectContaining({ entry_type: "credit", amount: 500, reference_id: "fund-owner-a", transaction_type: "wallet_topup", balance_after: 500 }),
    ]);
    expect(err(await h.call("getWallet", auth, { params: { wallet_id: "not-a-uuid" } })).code).toBe("wallet_not_found");
    expect(err(await h.call("listWalletEntries", auth, { params: { wallet_id: "00000000-0000-4000-8000-000000000000" } })).code).toBe("wallet_not_found");
    await expectInvariants();
  });

  it("top-ups: sandbox posts, replay is 409 with the topup, live is topup_requires_checkout, creator wallets refuse", async () => {
    // Proves top-up rules (docs/api.md, Wallets) and reference_id replays.
    const auth = authFor(newOrg());
    const w = await fundedConsumer(auth, "tp", 0);
    const body = { amount: 700, reference_id: "top-1" };
    const first = ok(await h.call("depositToWallet", auth, { params: { wallet_id: w }, body }));
    expect(first.status).toBe(201);
    expect(first.body["topup"]).toMatchObject({ wallet_id: w, owner_id: "tp", balance: 700 });
    const dup = err(await h.call("depositToWallet", auth, { params: { wallet_id: w }, body }));
    expect(dup.code).toBe("duplicate_reference_id");
    expect(dup.extra?.["existing_transaction_id"]).toBe((first.body["topup"] as Record<string, unknown>)["transaction_id"]);
    expect(dup.extra?.["topup"]).toEqual(first.body["topup"]);
    expect(err(await h.call("depositToWallet", auth, { params: { wallet_id: w }, body: { ...body, amount: 1 } })).code).toBe("idempotency_conflict");
    const p = ok(await h.call("createParticipant", auth, { body: { participant_id: "cr" } })).body["participant"] as Record<string, unknown>;
    expect(err(await h.call("depositToWallet", auth, { params: { wallet_id: String(p["wallet_id"]) }, body: { amount: 1, reference_id: "x" } })).code).toBe(
      "wallet_not_topupable",
    );
    const live = authFor(auth.org_id, true);
    const lw = await fundedConsumer(live, "tp-live", 0);
    const refused = err(await h.call("depositToWallet", live, { params: { wallet_id: lw }, body }));
    expect(refused.code).toBe("topup_requires_checkout");
    expect(refused.hint).toContain("POST /v1/wallet-sessions");
    await expectInvariants();
  });

  it("withdrawals: redeemable consumer wallets only; creator earnings point at payouts; insufficient is 422", async () => {
    // Proves withdrawal rules (docs/api.md, Wallets).
    const auth = authFor(newOrg());
    const w = await fundedConsumer(auth, "wd", 300);
    const res = ok(await h.call("withdrawFromWallet", auth, { params: { wallet_id: w }, body: { amount: 100, reference_id: "w1" } }));
    expect(res.body["withdrawal"]).toMatchObject({ wallet_id: w, amount: 100, balance: 200 });
    expect(err(await h.call("withdrawFromWallet", auth, { params: { wallet_id: w }, body: { amount: 201, reference_id: "w2" } })).code).toBe(
      "insufficient_balance",
    );
    const locked = await fundedConsumer(auth, "not-redeemable", 100, { redeemable: false });
    expect(err(await h.call("withdrawFromWallet", auth, { params: { wallet_id: locked }, body: { amount: 1, reference_id: "w3" } })).code).toBe(
      "wallet_not_redeemable",
    );
    const p = ok(await h.call("createParticipant", auth, { body: { participant_id: "cw" } })).body["participant"] as Record<string, unknown>;
    const creator = err(await h.call("withdrawFromWallet", auth, { params: { wallet_id: String(p["wallet_id"]) }, body: { amount: 1, reference_id: "w4" } }));
    expect(creator.code).toBe("wallet_withdrawal_not_supported");
    expect(creator.hint).toContain("POST /v1/payouts");
    expect(err(await h.call("withdrawFromWallet", auth, { params: { wallet_id: w }, body: { amount: 0, reference_id: "w5" } })).code).toBe("validation_error");
    await expectInvariants();
  });
});

describe("transfers", () => {
  it("moves between transferable wallets by wallet or participant ids, with every refusal", async () => {
    // Proves transfer (docs/api.md, Holds and transfers): answer shape, transfer_to_self, wallet_not_transferable, 404s, replay.
    const auth = authFor(newOrg());
    const a = await fundedConsumer(auth, "ta", 1000);
    ok(await h.call("createParticipant", auth, { body: { participant_id: "tp1" } }));
    ok(await h.call("createParticipant", auth, { body: { participant_id: "tp2" } }));
    const body = { amount: 400, reference_id: "tr-1", from_wallet_id: a, to_participant_id: "tp1" };
    const t = ok(await h.call("transferBetweenWallets", auth, { body }));
    expect(t.status).toBe(201);
    expect(t.body["transfer"]).toMatchObject({ from_balance: 600, to_balance: 400 });
    expect(err(await h.call("transferBetweenWallets", auth, { body })).code).toBe("duplicate_reference_id");
    ok(await h.call("transferBetweenWallets", auth, { body: { amount: 150, reference_id: "tr-2", from_participant_id: "tp1", to_participant_id: "tp2" } }));
    expect(
      err(await h.call("transferBetweenWallets", auth, { body: { amount: 1, reference_id: "tr-3", from_participant_id: "tp1", to_participant_id: "tp1" } }))
        .code,
    ).toBe("transfer_to_self");
    const stuck = await fundedConsumer(auth, "stuck", 100, { redeemable: true, transferable: false });
    expect(
      err(await h.call("transferBetweenWallets", auth, { body: { amount: 1, reference_id: "tr-4", from_wallet_id: stuck, to_participant_id: "tp1" } })).code,
    ).toBe("wallet_not_transferable");
    expect(
      err(await h.call("transferBetweenWallets", auth, { body: { amount: 1, reference_id: "tr-5", from_participant_id: "ghost", to_participant_id: "tp1" } }))
        .code,
    ).toBe("participant_not_found");
    expect(err(await h.call("transferBetweenWallets", auth, { body: { amount: 1, reference_id: "tr-6", to_participant_id: "tp1" } })).code).toBe(
      "validation_error",
    );
    expect(
      err(
        await h.call("transferBetweenWallets", auth, { body: { amount: 10_000, reference_id: "tr-7", from_participant_id: "tp2", to_participant_id: "tp1" } }),
      ).code,
    ).toBe("insufficient_balance");
    await expectInvariants();
  });
});

describe("holds", () => {
  it("create, list, summary, release with transfer; not ready; already released answers the earlier release", async () => {
    // Proves holds end to end (docs/api.md, Holds and transfers), including that a release never pays out (money stays in wallets).
    const auth = authFor(newOrg());
    const payer = await fundedConsumer(auth, "hp", 2000);
    ok(await h.call("createParticipant", auth, { body: { participant_id: "seller" } }));
    ok(await h.call("createParticipant", auth, { body: { participant_id: "partner" } }));
    ok(await h.call("transferBetweenWallets", auth, { body: { amount: 1000, reference_id: "hf", from_wallet_id: payer, to_participant_id: "seller" } }));

    const created = ok(
      await h.call("createHold", auth, {
        body: { participant_id: "seller", amount: 300, reference_id: "hold-1", description: "escrow", release_transfer_to_participant_id: "partner" },
      }),
    );
    expect(created.status).toBe(201);
    const hold = created.body["hold"] as Record<string, unknown>;
    expect(hold).toMatchObject({
      participant_id: "seller",
      amount: 300,
      currency: "USD",
      hold_reason_code: "temporary_hold",
      hold_reason_description: "escrow",
      days_held: 0,
      hold_until: null,
      ready_for_release: true,
      release_status: "held",
    });
    expect(hold["id"]).toMatch(/^hold_/);
    expect(hold["transaction_reference"]).toMatch(/^txn_/);
    const dup = err(
      await h.call("createHold", auth, {
        body: { participant_id: "seller", amount: 300, reference_id: "hold-1", description: "escrow", release_transfer_to_participant_id: "partner" },
      }),
    );
    expect(dup.code).toBe("duplicate_reference_id");
    expect(dup.extra?.["hold"]).toMatchObject({ id: hold["id"] });

    const future = new Date(Date.now() + 86_400_000).toISOString();
    const later = ok(
      await h.call("createHold", auth, {
        body: { participant_id: "seller", amount: 200, reference_id: "hold-2", hold_reason_code: "dispute", hold_until: future },
      }),
    ).body["hold"] as Record<string, unknown>;
    expect(later["ready_for_release"]).toBe(false);
    expect(err(await h.call("createHold", auth, { body: { participant_id: "seller", amount: 501, reference_id: "hold-3" } })).code).toBe(
      "insufficient_balance",
    );

    const listed = ok(await h.call("listHolds", auth, { query: { participant_id: "seller" } })).body;
    expect(listed).toMatchObject({ count: 2, total: 2, limit: 100, offset: 0 });
    const ready = ok(await h.call("listHolds", auth, { query: { ready_only: true } })).body;
    expect(ready["count"]).toBe(1);
    const summary = ok(await h.call("getHoldsSummary", auth)).body["summary"];
    expect(summary).toEqual({ total_held: 500, total_ready: 300, count: 2, by_reason: { temporary_hold: 300, dispute: 200 } });

    const notReady = err(await h.call("releaseHold", auth, { params: { hold_id: String(later["id"]) }, body: {} }));
    expect(notReady.code).toBe("hold_not_ready");

    const released = ok(await h.call("releaseHold", auth, { params: { hold_id: String(hold["id"]) }, body: { execute_transfer: true } }));
    expect(released.status).toBe(200);
    const release = released.body["release"] as Record<string, unknown>;
    expect(release).toMatchObject({
      hold_id: hold["id"],
      status: "released",
      availability_released: true,
      executed: true,
      transfer_status: "completed",
      amount: 300,
      currency: "USD",
    });
    expect(release["id"]).toMatch(/^rel_/);
    expect(release["transfer_id"]).toMatch(/^txn_/);
    const again = err(await h.call("releaseHold", auth, { params: { hold_id: String(hold["id"]) }, body: {} }));
    expect(again.code).toBe("hold_already_released");
    expect(again.extra?.["release"]).toEqual(release);

    const seller = ok(await h.call("getParticipant", auth, { params: { participant_id: "seller" } })).body["participant"];
    expect(seller).toMatchObject({ ledger_balance_cents: 700, held_amount_cents: 200, available_balance_cents: 500 });
    const partner = ok(await h.call("getParticipant", auth, { params: { participant_id: "partner" } })).body["participant"];
    expect(partner).toMatchObject({ ledger_balance_cents: 300, held_amount_cents: 0 });
    expect(err(await h.call("releaseHold", auth, { params: { hold_id: "hold_nope" }, body: {} })).code).toBe("hold_not_found");
    await expectInvariants();
  });

  it("concurrent releases of one hold: one release, the others hold_already_released", async () => {
    // Proves releasing is exactly-once even when requests race (and differ in execute_transfer).
    const auth = authFor(newOrg());
    const payer = await fundedConsumer(auth, "rp", 500);
    ok(await h.call("createParticipant", auth, { body: { participant_id: "r1" } }));
    ok(await h.call("createParticipant", auth, { body: { participant_id: "r2" } }));
    ok(await h.call("transferBetweenWallets", auth, { body: { amount: 500, reference_id: "rf", from_wallet_id: payer, to_participant_id: "r1" } }));
    const hold = ok(
      await h.call("createHold", auth, { body: { participant_id: "r1", amount: 500, reference_id: "rh", release_transfer_to_participant_id: "r2" } }),
    ).body["hold"] as Record<string, unknown>;
    const replies = await Promise.all(
      Array.from({ length: 10 }, (_, i) => h.call("releaseHold", auth, { params: { hold_id: String(hold["id"]) }, body: { execute_transfer: i % 2 === 0 } })),
    );
    expect(replies.filter((r) => r.ok)).toHaveLength(1);
    expect(replies.filter((r) => errorCode(r) === "hold_already_released")).toHaveLength(9);
    await expectInvariants();
  });
});

describe("isolation", () => {
  it("another org's or environment's participants, wallets and holds are 404", async () => {
    // Proves every read and write filters by org_id and livemode.
    const org = newOrg();
    const sandbox = authFor(org, false);
    const live = authFor(org, true);
    const other = authFor(newOrg(), false);
    const p = ok(await h.call("createParticipant", sandbox, { body: { participant_id: "iso" } })).body["participant"] as Record<string, unknown>;
    const w = await fundedConsumer(sandbox, "iso-buyer", 100);
    const hold = ok(await h.call("createHold", sandbox, { body: { wallet_id: w, amount: 10, reference_id: "iso-h" } })).body["hold"] as Record<string, unknown>;
    for (const auth of [live, other]) {
      expect(err(await h.call("getParticipant", auth, { params: { participant_id: "iso" } })).code).toBe("participant_not_found");
      expect(err(await h.call("getWallet", auth, { params: { wallet_id: String(p["wallet_id"]) } })).code).toBe("wallet_not_found");
      expect(err(await h.call("getWallet", auth, { params: { wallet_id: w } })).code).toBe("wallet_not_found");
      expect(err(await h.call("listWalletEntries", auth, { params: { wallet_id: w } })).code).toBe("wallet_not_found");
      expect(err(await h.call("withdrawFromWallet", auth, { params: { wallet_id: w }, body: { amount: 1, reference_id: "x" } })).code).toBe("wallet_not_found");
      expect(
        err(await h.call("transferBetweenWallets", auth, { body: { amount: 1, reference_id: "x", from_wallet_id: w, to_participant_id: "iso" } })).code,
      ).toBe("wallet_not_found");
      expect(err(await h.call("releaseHold", auth, { params: { hold_id: String(hold["id"]) }, body: {} })).code).toBe("hold_not_found");
      expect(ok(await h.call("listParticipants", auth)).body["total"]).toBe(0);
      expect(ok(await h.call("listWallets", auth)).body["total"]).toBe(0);
      expect(ok(await h.call("listHolds", auth)).body["total"]).toBe(0);
      expect(ok(await h.call("getHoldsSummary", auth)).body["summary"]).toMatchObject({ count: 0, total_held: 0 });
    }
    // The same participant id in live is a different participant with its own wallet.
    const liveP = ok(await h.call("createParticipant", live, { body: { participant_id: "iso" } }));
    expect(liveP.status).toBe(201);
    expect((liveP.body["participant"] as Record<string, unknown>)["wallet_id"]).not.toBe(p["wallet_id"]);
    await expectInvariants();
  });
});
