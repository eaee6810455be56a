// Proves refunds through `svc.ledger.post` on real PostgreSQL + NATS: the ledger computes each refund's split
// and postings, returns money to where the sale took it from, covers the creator's part from the sale's hold
// first and books a shortfall to creator_receivable (or refuses it), never overdraws a sale's remainder under
// concurrency, and leaves every invariant intact for random sequences of partial refunds.
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkInvariants } from "../verify/invariants.ts";
import { err, newOrg, ok, startLedger, type LedgerHarness } from "../test-support.ts";
import { createParticipant } from "./participants.ts";
import { createWallet } from "./wallets.ts";

let h: LedgerHarness;

beforeAll(async () => {
  h = await startLedger();
});
afterAll(async () => {
  await h?.close();
});

interface Sale {
  org: string;
  ref: string;
  creatorWallet: string;
}

/** A checkout-like sale: platform cash in, creator share (held or not), platform revenue and tax. */
async function sale(opts: { gross: number; creator: number; tax: number; hold: boolean; org?: string; buyerWallet?: string; ref?: string }): Promise<Sale> {
  const org = opts.org ?? newOrg();
  const scope = { orgId: org, livemode: false };
  const p = await createParticipant(h.deps, scope, { participant_id: "creator" }).catch(() => undefined);
  const creatorWallet = String(p?.participant["wallet_id"] ?? "");
  const ref = opts.ref ?? `sale-${Math.random().toString(36).slice(2)}`;
  const source = opts.buyerWallet === undefined ? { system: "platform_cash" } : { wallet_id: opts.buyerWallet };
  const platform = opts.gross - opts.creator - opts.tax;
  const postings = [
    ...(opts.creator > 0 ? [{ debit: source, credit: { participant_id: "creator" }, amount: opts.creator }] : []),
    ...(platform > 0 ? [{ debit: source, credit: { system: "platform_revenue" }, amount: platform }] : []),
    ...(opts.tax > 0 ? [{ debit: source, credit: { system: "sales_tax_payable" }, amount: opts.tax }] : []),
  ];
  const hold = opts.hold && opts.creator > 0;
  ok(
    await h.postRpc({
      org_id: org,
      livemode: false,
      kind: "checkout_sale",
      reference_id: ref,
      amount: opts.gross,
      postings,
      holds_create: hold ? [{ wallet: { participant_id: "creator" }, amount: opts.creator, reference_id: `hold:${ref}` }] : [],
      sale: {
        sale_reference: ref,
        participant_id: "creator",
        gross: opts.gross,
        creator_amount: opts.creator,
        platform_amount: platform,
        sales_tax: opts.tax,
        ...(hold ? { hold_index: 0 } : {}),
      },
    }),
  );
  return { org, ref, creatorWallet };
}

function refund(s: Sale, ref: string, body: Record<string, unknown>) {
  return h.postRpc({ org_id: s.org, livemode: false, kind: "refund", reference_id: ref, refund: { sale_reference: s.ref, ...body } });
}

async function wallet(id: string): Promise<{ balance: number; held: number }> {
  const [row] = await h.env.adminSql<{ balance: string; held_amount: string }[]>`select balance, held_amount from ledger.accounts where id = ${id}`;
  return { balance: Number(row?.balance), held: Number(row?.held_amount) };
}

async function receivable(org: string): Promise<number> {
  const [row] = await h.env.adminSql<{ n: string }[]>`
    select coalesce(sum(s.balance), 0)::text as n from ledger.accounts a join ledger.account_balance_shards s on s.account_id = a.id
    where a.org_id = ${org} and a.account_type = 'creator_receivable'`;
  return Number(row?.n ?? 0);
}

async function expectInvariants(org: string): Promise<void> {
  expect((await checkInvariants(h.env.adminSql, { orgId: org })).violations).toEqual([]);
}

describe("refunds", () => {
  it("a partial refund of both sides comes from the sale's hold first and answers its breakdown; replays answer it again", async () => {
    const s = await sale({ gross: 10_000, creator: 7_200, tax: 1_000, hold: true });
    const first = ok(await refund(s, "refund:r1", { amount: 2_500 }));
    expect(first.body["duplicate"]).toBe(false);
    expect(first.body["amount"]).toBe(2_500);
    expect((first.body["extra"] as Record<string, unknown>)["refund"]).toMatchObject({
      from_creator: 1_800,
      from_platform: 700,
      sales_tax: 250,
      remaining_amount: 7_500,
      is_full_refund: false,
    });
    expect(first.body["extra"]).toMatchObject({ hold_amount_used: 1_800, creator_receivable_amount: 0 });
    expect(await wallet(s.creatorWallet)).toEqual({ balance: 5_400, held: 5_400 });
    expect(ok(await refund(s, "refund:r1", { amount: 2_500 })).body).toEqual({ ...first.body, duplicate: true });
    expect(err(await refund(s, "refund:r1", { amount: 2_400 })).code).toBe("idempotency_conflict");
    // The rest: the hold ends, the sale is fully refunded, nothing more can be refunded.
    const rest = ok(await refund(s, "refund:r2", {}));
    expect((rest.body["extra"] as Record<string, unknown>)["refund"]).toMatchObject({
      amount: 7_500,
      from_creator: 5_400,
      from_platform: 2_100,
      remaining_amount: 0,
      is_full_refund: true,
    });
    expect(await wallet(s.creatorWallet)).toEqual({ balance: 0, held: 0 });
    expect(err(await refund(s, "refund:r3", { amount: 1 })).code).toBe("sale_already_fully_refunded");
    const [hold] = await h.env.adminSql`select status from ledger.holds where org_id = ${s.org}`;
    expect(hold?.["status"]).toBe("released");
    await expectInvariants(s.org);
  });

  it("answers unknown sales, over-remaining amounts and reversed sales with their codes, and moves nothing", async () => {
    const s = await sale({ gross: 1_000, creator: 800, tax: 0, hold: false });
    expect(err(await refund({ ...s, ref: "nope" }, "refund:x", {})).code).toBe("original_sale_not_found");
    const over = err(await refund(s, "refund:over", { amount: 1_001 }));
    expect([over.code, over.extra?.["remaining_amount"]]).toEqual(["refund_amount_exceeds_remaining", 1_000]);
    const side = err(await refund(s, "refund:side", { amount: 201, refund_from: "platform_only" }));
    expect([side.code, side.extra?.["remaining_amount"]]).toEqual(["refund_amount_exceeds_remaining", 200]);
    expect(
      err(
        await h.postRpc({
          org_id: s.org,
          livemode: false,
          kind: "refund",
          reference_id: "refund:p",
          postings: [{ debit: { system: "platform_cash" }, credit: { system: "platform_revenue" }, amount: 1 }],
          refund: { sale_reference: s.ref },
        }),
      ).code,
    ).toBe("validation_error");
    expect(await wallet(s.creatorWallet)).toEqual({ balance: 800, held: 0 });
    const [row] = await h.env.adminSql<{ id: string }[]>`select transaction_id as id from ledger.sales where org_id = ${s.org}`;
    const id = row?.id ?? "";
    ok(
      await h.call(
        "reverseTransaction",
        { org_id: s.org, livemode: false, key_id: "k", scopes: null, request_id: "req_rev" },
        { body: { transaction_id: id, reason: "fraud" } },
      ),
    );
    expect(err(await refund(s, "refund:after", { amount: 1 })).code).toBe("sale_already_reversed");
    await expectInvariants(s.org);
  });

  it("a refund reversed (the card processor failed it) gives its parts back to the sale's remainder; never in part", async () => {
    const s = await sale({ gross: 1_000, creator: 800, tax: 0, hold: false });
    ok(await refund(s, "refund:a", { amount: 600 }));
    const failed = ok(await refund(s, "refund:b", {}));
    expect(err(await refund(s, "refund:c", { amount: 1 })).code).toBe("sale_already_fully_refunded");
    const ctx = { org_id: s.org, livemode: false, key_id: "k", scopes: null, request_id: "req_rev" };
    const id = String(failed.body["transaction_id"]);
    expect(err(await h.call("reverseTransaction", ctx, { body: { transaction_id: id, reason: "refund_failed", partial_amount: 100 } })).code).toBe(
      "validation_error",
    );
    ok(await h.call("reverseTransaction", ctx, { body: { transaction_id: id, reason: "refund_failed" } }));
    expect(await wallet(s.creatorWallet)).toEqual({ balance: 320, held: 0 });
    const [row] = await h.env.adminSql<{ refunded_amount: string; creator_refunded: string }[]>`
      select refunded_amount, creator_refunded from ledger.sales where org_id = ${s.org}`;
    expect([Number(row?.refunded_amount), Number(row?.creator_refunded)]).toEqual([600, 480]);
    // The remainder is refundable again, exactly once.
    const again = ok(await refund(s, "refund:d", {}));
    expect((again.body["extra"] as Record<string, unknown>)["refund"]).toMatchObject({ amount: 400, from_creator: 320, remaining_amount: 0 });
    expect(await wallet(s.creatorWallet)).toEqual({ balance: 0, held: 0 });
    await expectInvariants(s.org);
  });

  it("a wallet-funded sale's refund goes back to the buyer's wallet", async () => {
    const org = newOrg();
    const scope = { orgId: org, livemode: false };
    const buyer = String((await createWallet(h.deps, scope, { owner_id: "buyer" })).wallet["id"]);
    ok(
      await h.postRpc({
        org_id: org,
        livemode: false,
        kind: "fund",
        reference_id: "fund",
        postings: [{ debit: { system: "sandbox_funding" }, credit: { wallet_id: buyer }, amount: 5_000 }],
      }),
    );
    const s = await sale({ org, gross: 5_000, creator: 4_000, tax: 0, hold: false, buyerWallet: buyer });
    expect(await wallet(buyer)).toEqual({ balance: 0, held: 0 });
    ok(await refund(s, "refund:w", { amount: 1_000 }));
    expect(await wallet(buyer)).toEqual({ balance: 1_000, held: 0 });
    expect(await wallet(s.creatorWallet)).toEqual({ balance: 3_200, held: 0 });
    await expectInvariants(org);
  });

  it("a creator who spent the share: the shortfall goes to creator_receivable and is repaid from the next earnings; or the refund is refused", async () => {
    const s = await sale({ gross: 1_000, creator: 800, tax: 0, hold: false });
    // The creator's share leaves the wallet (as a payout would).
    ok(
      await h.postRpc({
        org_id: s.org,
        livemode: false,
        kind: "payout",
        reference_id: "po",
        postings: [{ debit: { participant_id: "creator" }, credit: { system: "payouts_in_transit" }, amount: 700 }],
      }),
    );
    expect(err(await refund(s, "refund:strict", { shortfall: "refuse" })).code).toBe("insufficient_balance");
    const r = ok(await refund(s, "refund:all", {}));
    expect(r.body["extra"]).toMatchObject({ creator_receivable_amount: 700 });
    expect(await wallet(s.creatorWallet)).toEqual({ balance: 0, held: 0 });
    expect(await receivable(s.org)).toBe(700);
    await sale({ org: s.org, gross: 1_000, creator: 800, tax: 0, hold: false });
    expect(await wallet(s.creatorWallet)).toEqual({ balance: 100, held: 0 });
    expect(await receivable(s.org)).toBe(0);
    await expectInvariants(s.org);
  });

  it("50 parallel partial refunds that together exceed the sale never overdraw its remainder", async () => {
    const s = await sale({ gross: 10_000, creator: 7_000, tax: 500, hold: true });
    const replies = await Promise.all(Array.from({ length: 50 }, (_, i) => refund(s, `refund:p${i}`, { amount: 300 })));
    const done = replies.filter((r) => r.ok);
    expect(done).toHaveLength(33);
    for (const r of replies.filter((x) => !x.ok)) expect(err(r).code).toBe("refund_amount_exceeds_remaining");
    const [row] = await h.env.adminSql<
      { refunded_amount: string; creator_refunded: string }[]
    >`select refunded_amount, creator_refunded from ledger.sales where org_id = ${s.org}`;
    expect(Number(row?.refunded_amount)).toBe(9_900);
    expect(await wallet(s.creatorWallet)).toEqual({ balance: 7_000 - Number(row?.creator_refunded), held: 7_000 - Number(row?.creator_refunded) });
    await expectInvariants(s.org);
  });

  it("random sales, holds and sequences of partial refunds in every mode: exact totals, no negative wallet, invariants hold", async () => {
    const step = fc.record({
      amount: fc.integer({ min: 1, max: 4_000 }),
      mode: fc.constantFrom("both", "platform_only", "creator_only"),
      spend: fc.integer({ min: 0, max: 3_000 }),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          gross: fc.integer({ min: 1, max: 10_000 }),
          creatorBps: fc.integer({ min: 0, max: 10_000 }),
          taxBps: fc.integer({ min: 0, max: 2_000 }),
          hold: fc.boolean(),
        }),
        fc.array(step, { minLength: 1, maxLength: 6 }),
        async (g, steps) => {
          const tax = Math.floor((g.gross * g.taxBps) / 10_000);
          const creator = Math.floor(((g.gross - tax) * g.creatorBps) / 10_000);
          const s = await sale({ gross: g.gross, creator, tax, hold: g.hold });
          let refunded = 0;
          for (const [i, st] of steps.entries()) {
            // Sometimes the creator spends from the available balance between refunds.
            const w = await wallet(s.creatorWallet);
            const spend = Math.min(st.spend, w.balance - w.held);
            if (spend > 0)
              ok(
                await h.postRpc({
                  org_id: s.org,
                  livemode: false,
                  kind: "spend",
                  reference_id: `sp${i}`,
                  postings: [{ debit: { participant_id: "creator" }, credit: { system: "payouts_in_transit" }, amount: spend }],
                }),
              );
            const r = await refund(s, `refund:${i}`, { amount: st.amount, refund_from: st.mode });
            if (r.ok) refunded += st.amount;
            else expect(["refund_amount_exceeds_remaining", "sale_already_fully_refunded"]).toContain(err(r).code);
          }
          const final = await refund(s, "refund:rest", {});
          if (final.ok) refunded += Number(final.body["amount"]);
          expect(refunded).toBe(g.gross);
          const [row] = await h.env.adminSql<
            { creator_refunded: string; platform_refunded: string }[]
          >`select creator_refunded, platform_refunded from ledger.sales where org_id = ${s.org}`;
          // Once everything is refunded, each side gave back exactly what it received.
          expect([Number(row?.creator_refunded), Number(row?.platform_refunded)]).toEqual([creator, g.gross - creator]);
          const w = await wallet(s.creatorWallet);
          expect(w.balance).toBeGreaterThanOrEqual(w.held);
          expect(w.held).toBe(0);
          await expectInvariants(s.org);
        },
      ),
      { numRuns: 25 },
    );
  }, 120_000);
});
