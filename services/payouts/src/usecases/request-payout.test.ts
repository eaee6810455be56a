// The payout request's money path with fakes behind its ports: intent -> ledger post -> settle, a definitive
// refusal, a ledger that does not answer, and replays by reference_id.
import { DomainError, tenantOf, type Tenant } from "@treasury/contracts";
import { LedgerOutcomeUnknown } from "@treasury/service-kit";
import { describe, expect, it } from "vitest";
import { fakes, posted, type Fakes } from "../../test/fakes.ts";
import { bankAccountAad } from "./deps.ts";
import { reconcilePass } from "./reconcile.ts";
import { requestPayout } from "./request-payout.ts";
import { getPayout } from "./read.ts";

const SANDBOX: Tenant = tenantOf({ org_id: "org_a", livemode: false });
const LIVE: Tenant = tenantOf({ org_id: "org_a", livemode: true });

const body = (extra: Record<string, unknown> = {}) => ({ amount: 1000, reference_id: "ref_1", participant_id: "creator_1", ...extra });

/** A creator live payouts may go to: verified, tax certified, a bank account, an approved business, a balance. */
async function eligibleLiveCreator(f: Fakes): Promise<void> {
  f.ledger.addCreator("creator_1", 5000);
  f.compliance.creators.set("creator_1", { status: "approved", tax_certified: true });
  f.compliance.business = "approved";
  const details = { account_holder_name: "Ada", account_number: "000123456789" };
  const values = {
    routing_number: "011000015",
    account_type: "checking" as const,
    last4: "6789",
    sealed: f.sealer.sealJson(details, bankAccountAad(LIVE, "creator_1")),
    sealed_key_id: "t1",
  };
  await f.bankAccounts.save(LIVE, "creator_1", "ba_1", values, () => ({ type: "bank_account.updated", org_id: "org_a", livemode: true, data: {} }));
}

async function codeOf(p: Promise<unknown>): Promise<string> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  if (!(e instanceof DomainError)) throw new Error(`expected a DomainError, got ${String(e)}`);
  return e.code;
}

describe("requestPayout", () => {
  it("sandbox: posts the payout once under payout:<id>, then it is paid with payout.created and payout.executed", async () => {
    const f = fakes();
    const wallet = f.ledger.addCreator("creator_1", 5000);
    const payout = await requestPayout(f.deps, SANDBOX, body({ fees: 100, fees_paid_by: "creator" }));
    expect(payout).toMatchObject({
      status: "paid",
      rail: "sandbox",
      wallet_id: wallet.id,
      amount: 1000,
      fees: 100,
      net_amount: 900,
      previous_balance: 5000,
      new_balance: 4000,
    });
    expect(f.ledger.posts).toHaveLength(1);
    expect(f.ledger.posts[0]).toMatchObject({
      kind: "payout",
      reference_id: `payout:${payout.id}`,
      amount: 1000,
      postings: [
        { debit: { participant_id: "creator_1" }, credit: { system: "platform_cash" }, amount: 900 },
        { debit: { participant_id: "creator_1" }, credit: { system: "platform_revenue" }, amount: 100 },
      ],
      preconditions: [{ wallet: { participant_id: "creator_1" }, available_gte: 1000 }],
    });
    expect(f.payouts.events.map((e) => [e.type, e.payload.data["status"]])).toEqual([
      ["payout.created", "pending"],
      ["payout.executed", "paid"],
    ]);
    // The crash points run in order: the intent is recorded before the post, the post answered before the settle.
    expect(f.hooks).toEqual(["afterIntent", "afterLedgerPost"]);
  });

  it("live: the payout waits for a bank file (pending, awaiting_file) with its destination sealed to it", async () => {
    const f = fakes();
    await eligibleLiveCreator(f);
    const payout = await requestPayout(f.deps, LIVE, body());
    expect(payout).toMatchObject({ status: "pending", bank_transfer_status: "awaiting_file", dest_account_type: "checking", dest_last4: "6789" });
    expect(f.ledger.posts[0]?.postings?.[0]).toMatchObject({ credit: { system: "payouts_in_transit" }, amount: 1000 });
    const row = f.payouts.rows.get(payout.id);
    expect(f.sealer.openJson(row?.dest_sealed ?? "", `payouts.payout_destination:${payout.id}`)).toEqual({
      account_holder_name: "Ada",
      account_number: "000123456789",
    });
    expect(f.payouts.events.map((e) => e.type)).toEqual(["payout.created"]);
  });

  it("a definitive refusal refuses the intent: nothing shown, and the same request is driven again later", async () => {
    const f = fakes();
    f.ledger.addCreator("creator_1", 5000);
    f.ledger.answer = () => new DomainError("insufficient_balance", "Available balance is below 1000");
    expect(await codeOf(requestPayout(f.deps, SANDBOX, body()))).toBe("insufficient_balance");
    const [row] = [...f.payouts.rows.values()];
    expect(row).toMatchObject({ status: "refused", refusal_code: "insufficient_balance" });
    expect(f.payouts.events).toEqual([]);
    expect(f.hooks).toEqual(["afterIntent"]);
    expect(await codeOf(getPayout(f.deps, SANDBOX, row?.id ?? ""))).toBe("payout_not_found");

    // The ledger now has the money: the same request retries the same intent, under the same reference.
    f.ledger.answer = (req) => posted(req, undefined);
    const again = await requestPayout(f.deps, SANDBOX, body());
    expect(again).toMatchObject({ id: row?.id, status: "paid" });
    expect(f.ledger.posts.map((p) => p.reference_id)).toEqual([`payout:${row?.id}`, `payout:${row?.id}`]);
  });

  it("a refusal that is not definitive propagates and leaves the intent to be driven again", async () => {
    const f = fakes();
    f.ledger.addCreator("creator_1", 5000);
    f.ledger.answer = () => new DomainError("idempotency_conflict", "reference used for another request");
    expect(await codeOf(requestPayout(f.deps, SANDBOX, body()))).toBe("idempotency_conflict");
    expect([...f.payouts.rows.values()].map((r) => r.status)).toEqual(["posting"]);
  });

  it("a ledger that does not answer: service_timeout, the intent stays pending, and the reconciler finishes it once", async () => {
    const f = fakes();
    f.ledger.addCreator("creator_1", 5000);
    f.ledger.answer = () => new LedgerOutcomeUnknown("service_timeout");
    expect(await codeOf(requestPayout(f.deps, SANDBOX, body()))).toBe("service_timeout");
    const [row] = [...f.payouts.rows.values()];
    expect(row?.status).toBe("posting");
    expect((await getPayout(f.deps, SANDBOX, row?.id ?? ""))["payout"]).toMatchObject({ status: "pending" });
    expect(f.payouts.events).toEqual([]);
    expect(f.hooks).toEqual(["afterIntent"]);

    f.ledger.answer = (req) => posted(req, undefined);
    const pass = reconcilePass(f.deps, { graceMs: 0, batchMax: 10, cutIntervalMs: 0 });
    expect(await pass()).toBe(1);
    expect(f.payouts.rows.get(row?.id ?? "")?.status).toBe("paid");
    expect(f.ledger.posts.map((p) => p.reference_id)).toEqual([`payout:${row?.id}`, `payout:${row?.id}`]);
    expect(await pass()).toBe(0);
  });

  it("a replay of the reference_id answers the first payout (409) without posting again; another body conflicts", async () => {
    const f = fakes();
    f.ledger.addCreator("creator_1", 5000);
    const first = await requestPayout(f.deps, SANDBOX, body());
    const replay = await requestPayout(f.deps, SANDBOX, body()).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(replay).toBeInstanceOf(DomainError);
    expect(replay).toMatchObject({
      code: "duplicate_reference_id",
      extra: { payout: { id: first.id, status: "paid" }, existing_transaction_id: first.transaction_id },
    });
    expect(await codeOf(requestPayout(f.deps, SANDBOX, body({ amount: 2000 })))).toBe("idempotency_conflict");
    expect(f.ledger.posts).toHaveLength(1);
    expect(f.payouts.rows.size).toBe(1);
  });

  it("a live replay answers its payout before any eligibility check", async () => {
    const f = fakes();
    await eligibleLiveCreator(f);
    await requestPayout(f.deps, LIVE, body());
    f.compliance.business = "rejected";
    expect(await codeOf(requestPayout(f.deps, LIVE, body()))).toBe("duplicate_reference_id");
  });
});
