// Proves record-sale with a creator_id the ledger does not know: the participant is created with the org's
// default split in the sale's own transaction, concurrent first sales create it once, a replay is 409
// duplicate_reference_id with the existing transaction and idempotent: true, and the ledger stays consistent.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verifyLedger } from "./verify/verify.ts";
import { authFor, err, newOrg, ok, startLedger, type LedgerHarness } from "./test-support.ts";

let h: LedgerHarness;

beforeAll(async () => {
  h = await startLedger();
});
afterAll(async () => {
  await h?.close();
});

describe("record-sale for an unknown creator", () => {
  it("creates the participant with the default split, in the sale's transaction; a replay is 409 with idempotent", async () => {
    // Proves the participant, its wallet and the sale exist together, and how a replay answers.
    const auth = authFor(newOrg());
    const body = { reference_id: "first-sale", creator_id: "newcomer", amount: 10_000, processing_fee: 300, hold_funds: true };
    const sale = ok(await h.call("recordSale", auth, { body }));
    expect(sale.status).toBe(201);
    expect(sale.body).toMatchObject({
      breakdown: { creator_percent: 80, creator_amount: 8000, platform_amount: 1700 },
      creator_balance: 8000,
      creator_available_balance: 0,
    });
    expect(sale.body["hold_id"]).toMatch(/^hold_/);
    const participant = ok(await h.call("getParticipant", auth, { params: { participant_id: "newcomer" } })).body["participant"];
    expect(participant).toMatchObject({
      id: "newcomer",
      default_split_percent: null,
      ledger_balance_cents: 8000,
      held_amount_cents: 8000,
      available_balance_cents: 0,
    });
    const [rows] = await h.env.adminSql<{ participant_at: Date; sale_at: Date }[]>`
      select p.created_at as participant_at, t.created_at as sale_at
      from ledger.participants p, ledger.transactions t
      where p.org_id = ${auth.org_id} and p.participant_id = 'newcomer' and t.org_id = ${auth.org_id} and t.reference_id = 'first-sale'`;
    // now() is the transaction's start time: equal times mean one database transaction wrote both.
    expect(rows?.participant_at.getTime()).toBe(rows?.sale_at.getTime());

    const replay = err(await h.call("recordSale", auth, { body }));
    expect(replay.code).toBe("duplicate_reference_id");
    expect(replay.extra).toMatchObject({
      existing_transaction_id: sale.body["transaction_id"],
      idempotent: true,
      transaction_id: sale.body["transaction_id"],
      creator_balance: 8000,
    });
    expect(err(await h.call("recordSale", auth, { body: { ...body, amount: 10_001 } })).code).toBe("idempotency_conflict");
    // The participant was made as a bare create would make it, so that create replays instead of conflicting.
    const create = ok(await h.call("createParticipant", auth, { body: { participant_id: "newcomer" } }));
    expect(create.status).toBe(200);
    expect(create.body["participant"]).toMatchObject({ created: false });
    // A known creator's sale (group-committed) answers its replay the same way.
    ok(await h.call("recordSale", auth, { body: { reference_id: "second-sale", creator_id: "newcomer", amount: 500 } }));
    expect(err(await h.call("recordSale", auth, { body: { reference_id: "second-sale", creator_id: "newcomer", amount: 500 } })).extra).toMatchObject({
      idempotent: true,
    });
  });

  it("concurrent first sales of one unknown creator create one participant and credit every sale", async () => {
    // Proves the wallet's unique key arbitrates concurrent creations inside concurrent posting transactions.
    const auth = authFor(newOrg());
    const replies = await Promise.all(
      Array.from({ length: 6 }, (_, i) => h.call("recordSale", auth, { body: { reference_id: `rush-${i}`, creator_id: "rush", amount: 1000 + i } })),
    );
    for (const r of replies) expect(ok(r).status).toBe(201);
    const [counts] = await h.env.adminSql<{ participants: string; wallets: string; balance: string }[]>`
      select (select count(*) from ledger.participants where org_id = ${auth.org_id} and participant_id = 'rush') as participants,
        (select count(*) from ledger.accounts where org_id = ${auth.org_id} and participant_id = 'rush') as wallets,
        (select balance from ledger.accounts where org_id = ${auth.org_id} and participant_id = 'rush') as balance`;
    const expected = Array.from({ length: 6 }, (_, i) => Math.floor(((1000 + i) * 8000) / 10_000)).reduce((a, b) => a + b, 0);
    expect(counts).toEqual({ participants: "1", wallets: "1", balance: String(expected) });
    const report = await verifyLedger(h.env.adminSql, { orgId: auth.org_id });
    expect(report.violations).toEqual([]);
  });
});
