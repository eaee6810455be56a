// Proves a live wallet top-up's completion over in-memory ports: the processor's payment credits the wallet once
// (intent → post → settle, the crash point between), a wallet the ledger refuses for good fails the top-up, and a
// ledger that does not answer leaves it `completing` for the reconciler.
import { DomainError } from "@treasury/contracts";
import { describe, expect, it } from "vitest";
import type { ProcessorPayment } from "../src/domain/records.ts";
import { reconcilePass } from "../src/usecases/reconcile.ts";
import { completeTopup } from "../src/usecases/wallet-topup.ts";
import { fakes, type Fakes } from "./fakes.ts";

const PAYMENT: ProcessorPayment = { sessionId: "cs_topup", paymentIntent: "pi_topup", charge: null, fee: 80 };

async function pendingTopup(f: Fakes) {
  return f.topups.insertOrFind({
    id: "wtop_1",
    org_id: "org_unit",
    livemode: true,
    wallet_session_id: "wals_1",
    wallet_id: "wal_buyer",
    amount: 2_500,
    nonce: "n1",
  });
}

describe("completeTopup", () => {
  it("credits the wallet once from platform cash, books the fee, and completes the top-up", async () => {
    const f = fakes();
    const topup = await pendingTopup(f);
    expect(await completeTopup(f.deps, topup, PAYMENT, 2_500)).toBe("top-up wtop_1 completed");
    expect(f.ledger.asked[0]).toMatchObject({
      kind: "processor_topup",
      reference_id: "wallet_topup:stripe:cs_topup",
      postings: [
        { debit: { system: "platform_cash" }, credit: { wallet_id: "wal_buyer" }, amount: 2_500 },
        { debit: { system: "processing_fees" }, credit: { system: "platform_cash" }, amount: 80 },
      ],
    });
    expect(f.topups.rows.get("wtop_1")).toMatchObject({ status: "completed", transaction_id: f.ledger.movements("processor_topup")[0]?.transaction_id });
    expect(f.steps).toEqual(["post:processor_topup", "afterLedgerPost"]);
    const again = await completeTopup(f.deps, (await f.topups.find("wtop_1"))!, PAYMENT, 2_500);
    expect(again).toBe("top-up wtop_1 already completed");
    expect(f.ledger.asked).toHaveLength(1);
  });

  it("fails the top-up when the ledger refuses the wallet for good", async () => {
    const f = fakes();
    const topup = await pendingTopup(f);
    f.ledger.next(new DomainError("wallet_not_active", "The wallet is frozen"));
    expect(await completeTopup(f.deps, topup, PAYMENT, 2_500)).toBe("top-up wtop_1 failed");
    expect(f.topups.rows.get("wtop_1")).toMatchObject({ status: "failed", failure_reason: "wallet_not_active: The wallet is frozen" });
  });

  it("leaves the top-up completing when the ledger does not answer; the reconciler credits it once", async () => {
    const f = fakes();
    const topup = await pendingTopup(f);
    f.ledger.next("lost-answer");
    const err = await completeTopup(f.deps, topup, PAYMENT, 2_500).catch((e: unknown) => e);
    expect((err as DomainError).code).toBe("service_timeout");
    expect(f.topups.rows.get("wtop_1")?.status).toBe("completing");
    expect(await reconcilePass(f.deps, { graceMs: 0, batchMax: 10 }, f.deps.log)).toBe(1);
    expect(f.topups.rows.get("wtop_1")?.status).toBe("completed");
    expect(f.ledger.movements("processor_topup")).toHaveLength(1);
  });

  it("credits nothing for a payment of another amount", async () => {
    const f = fakes();
    const topup = await pendingTopup(f);
    expect(await completeTopup(f.deps, topup, PAYMENT, 2_400)).toMatch(/not credited/);
    expect(f.ledger.asked).toHaveLength(0);
    expect(f.topups.rows.get("wtop_1")?.status).toBe("pending");
  });
});
