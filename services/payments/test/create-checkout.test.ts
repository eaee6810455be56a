// Proves checkout creation over in-memory ports: a hosted session is stored with its answer and moves no money, a
// repeated idempotency key answers the first body (and refuses another body), a direct sandbox payment posts the
// sale under `checkout:<id>` and answers it completed, and refusals (declined card, no buyer wallet, a risk denial)
// store nothing.
import { DomainError } from "@treasury/contracts";
import { describe, expect, it } from "vitest";
import { createCheckoutSession } from "../src/usecases/create-checkout.ts";
import { fakes, TENANT } from "./fakes.ts";

const ALT = "http://alt.test";

describe("createCheckoutSession", () => {
  it("stores a hosted session with its answer, split by the participant's default percent, and posts nothing", async () => {
    const f = fakes();
    f.ledger.addParticipant("creator_1", { split: 70, name: "Ada's Shop" });
    const res = await createCheckoutSession(f.deps, TENANT, { participant_id: "creator_1", amount: 1_000, sales_tax: 100 }, ALT);
    expect(res.replayed).toBe(false);
    const cs = res.checkoutSession;
    expect(cs).toMatchObject({ status: "pending", mode: "session", provider: "soledgic", checkout_url: `${ALT}/v1/checkout/${String(cs["id"])}` });
    // 70 % of (1000 − 100) to the creator, the rest of the net to the platform.
    expect(cs["breakdown"]).toMatchObject({ gross_amount_cents: 1_000, sales_tax_amount_cents: 100, creator_amount_cents: 630, platform_amount_cents: 270 });
    const row = f.checkouts.rows.get(String(cs["id"]));
    expect(row).toMatchObject({ status: "pending", merchant_name: "Ada's Shop", create_response: cs });
    expect(f.ledger.asked).toHaveLength(0);
  });

  it("answers a repeated idempotency key with the first body, and refuses the key with another body", async () => {
    const f = fakes();
    f.ledger.addParticipant("creator_1");
    const body = { participant_id: "creator_1", amount: 1_000, idempotency_key: "order_1" };
    const first = await createCheckoutSession(f.deps, TENANT, body, ALT);
    const again = await createCheckoutSession(f.deps, TENANT, body, ALT);
    expect(again).toEqual({ checkoutSession: first.checkoutSession, replayed: true });
    expect(f.checkouts.rows.size).toBe(1);
    const other = await createCheckoutSession(f.deps, TENANT, { ...body, amount: 2_000 }, ALT).catch((e: unknown) => e);
    expect(other).toBeInstanceOf(DomainError);
    expect((other as DomainError).code).toBe("idempotency_conflict");
  });

  it("records a direct sandbox payment at once: one sale post under checkout:<id>, answered completed", async () => {
    const f = fakes();
    f.ledger.addParticipant("creator_1", { split: 50 });
    const res = await createCheckoutSession(f.deps, TENANT, { participant_id: "creator_1", amount: 2_000, payment_method_id: "pm_card_visa" }, ALT);
    const cs = res.checkoutSession;
    expect(res.replayed).toBe(false);
    expect(cs).toMatchObject({ status: "completed", mode: "direct", sale_reference: `checkout:${String(cs["id"])}` });
    const [sale] = f.ledger.movements("checkout_sale");
    expect(sale?.reference_id).toBe(`checkout:${String(cs["id"])}`);
    expect(f.ledger.asked[0]?.postings).toEqual([
      { debit: { system: "platform_cash" }, credit: { participant_id: "creator_1" }, amount: 1_000 },
      { debit: { system: "platform_cash" }, credit: { system: "platform_revenue" }, amount: 1_000 },
    ]);
    expect(f.checkouts.events.map((e) => e.type)).toEqual(["checkout.completed"]);
    expect(f.checkouts.rows.get(String(cs["id"]))?.create_response).toEqual(cs);
  });

  it("refuses a declined sandbox card and a wallet purchase without the buyer's wallet, storing nothing", async () => {
    const f = fakes();
    f.ledger.addParticipant("creator_1");
    const declined = await createCheckoutSession(
      f.deps,
      TENANT,
      { participant_id: "creator_1", amount: 500, payment_method_id: "pm_card_chargeDeclined" },
      ALT,
    ).catch((e: unknown) => e);
    expect((declined as DomainError).code).toBe("card_declined");
    const noWallet = await createCheckoutSession(
      f.deps,
      TENANT,
      { participant_id: "creator_1", amount: 500, purchase_mode: "direct_funded_wallet", customer_id: "buyer_1" },
      ALT,
    ).catch((e: unknown) => e);
    expect((noWallet as DomainError).code).toBe("wallet_not_found");
    expect(f.checkouts.rows.size).toBe(0);
    expect(f.ledger.asked).toHaveLength(0);
  });

  it("charges a wallet purchase to the buyer's wallet with the precondition that it holds the amount", async () => {
    const f = fakes();
    f.ledger.addParticipant("creator_1", { split: 80 });
    const wallet = f.ledger.addWallet({ owner_id: "buyer_1", available_balance: 5_000 });
    const res = await createCheckoutSession(
      f.deps,
      TENANT,
      { participant_id: "creator_1", amount: 1_000, purchase_mode: "direct_funded_wallet", buyer_user_id: "buyer_1" },
      ALT,
    );
    expect(res.checkoutSession).toMatchObject({ status: "completed", purchase_mode: "direct_funded_wallet" });
    expect(f.ledger.asked[0]?.preconditions).toEqual([{ wallet: { wallet_id: wallet.id }, available_gte: 1_000 }]);
    expect(f.ledger.asked[0]?.postings?.every((p) => "wallet_id" in p.debit && p.debit.wallet_id === wallet.id)).toBe(true);
  });
});

describe("createCheckoutSession and risk", () => {
  it("asks risk with the session's key, its participant, buyer and client address; a denial stores and posts nothing", async () => {
    const asked: unknown[] = [];
    const f = fakes({
      risk: {
        check: async (_t, p) => {
          asked.push(p);
          throw new DomainError("risk_denied", "Denied by a risk policy", { extra: { evaluation_id: "feval_1" } });
        },
      },
    });
    f.ledger.addParticipant("creator_1", { split: 80 });
    const body = { participant_id: "creator_1", amount: 5_000, payment_method_id: "pm_card_visa", customer_id: "buyer_9", idempotency_key: "idem_1" };
    const refused = await createCheckoutSession(f.deps, TENANT, body, ALT, "203.0.113.7").catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: "risk_denied", extra: { evaluation_id: "feval_1" } });
    expect(asked).toEqual([
      { operation: "checkout", key: "checkout:idem_1", amount: 5_000, participant_id: "creator_1", buyer_id: "buyer_9", ip: "203.0.113.7" },
    ]);
    expect(f.checkouts.rows.size).toBe(0);
    expect(f.ledger.movements("checkout_sale")).toHaveLength(0);
  });
});
