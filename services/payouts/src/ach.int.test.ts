// Proves the ACH machinery of the payouts service on real PostgreSQL and NATS: a file recorded but not delivered
// (a crash in between) is delivered later with the same bytes; file size limits and file id modifiers; sandbox
// rows never filed; and the reconciler finishing a settle or return whose ledger post a crash interrupted, with a
// stand-in answering `svc.ledger.post` over real NATS (a service may not import another; the end-to-end tests
// run the real ledger).
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newId } from "@treasury/contracts";
import { generateKeyRingEntry, parseKeyRing, Sealer } from "@treasury/service-kit";
import { allowRisk, makeScratchDir, setupTestEnv, type TestEnv } from "@treasury/testing";
import { insertPendingLivePayout, ORIGIN, startLedgerStandIn, type LedgerStandIn } from "../test/live-rail.ts";
import { readNachaFile } from "../test/nacha-reader.ts";
import { achDropRail, type BankRail } from "./adapters/bank-rail.ts";
import { buildPayouts, type PayoutsService } from "./service.ts";
import { cutFile } from "./usecases/cut-file.ts";
import { achFileAad } from "./usecases/deps.ts";

let env: TestEnv;
let svc: PayoutsService;
let dir: string;
let sealer: Sealer;
let ledger: LedgerStandIn;
/** While set, deliveries fail as a crash between the cut's commit and the write would leave them. */
let deliveryBroken = false;

beforeAll(async () => {
  env = await setupTestEnv();
  dir = makeScratchDir("payouts-ach-int-");
  const ring = parseKeyRing(generateKeyRingEntry("i1"));
  sealer = new Sealer(ring);
  const real = achDropRail({ dir, origin: ORIGIN });
  const rail: BankRail = {
    ...real,
    deliver: async (name, text) => {
      if (deliveryBroken) throw new Error("the drop directory is unreachable");
      return real.deliver(name, text);
    },
  };
  ledger = await startLedgerStandIn(env);
  svc = await buildPayouts(
    env.env("payouts", {
      PAYOUTS_ACH_FILE_ENTRIES_MAX: "2",
      PAYOUTS_ACH_CUT_INTERVAL_MS: "0",
      PAYOUTS_RECONCILE_INTERVAL_MS: "600000",
      PAYOUTS_RECONCILE_GRACE_MS: "0",
    }),
    { keyRing: ring, rail, risk: allowRisk },
  );
  await svc.start();
});
afterAll(async () => {
  await svc?.stop();
  await ledger?.close();
  await env?.cleanup();
});

/** A live payout waiting for a file, created `msAgo` milliseconds ago. */
const pendingLivePayout = (amount: number, msAgo = 0) => insertPendingLivePayout(env, sealer, amount, new Date(Date.now() - msAgo));
const files = () =>
  readdirSync(dir)
    .filter((f) => f.endsWith(".ach"))
    .sort();
async function statusOf(id: string): Promise<Record<string, unknown> | undefined> {
  const [r] = await env.adminSql<
    Record<string, unknown>[]
  >`select status, action, trace_number, ach_file_id, bank_transfer_status from payouts.payouts where id = ${id}`;
  return r;
}

describe("ACH files", () => {
  it("a file recorded but not delivered is delivered later, with the same bytes", async () => {
    // Proves the cut's commit and the file write are made safe by re-delivery: nothing is lost, nothing is filed twice.
    const a = await pendingLivePayout(1500, 2000);
    const b = await pendingLivePayout(2500, 1000);
    deliveryBroken = true;
    await expect(cutFile(svc.deps)).rejects.toThrow(/unreachable/);
    expect(files()).toEqual([]);
    expect(await statusOf(a)).toMatchObject({ status: "processing", bank_transfer_status: "submitted" });
    const [recorded] = await env.adminSql<
      { name: string; sealed_content: string; delivered_at: Date | null }[]
    >`select name, sealed_content, delivered_at from payouts.ach_files`;
    expect(recorded?.delivered_at).toBeNull();
    deliveryBroken = false;
    expect(await svc.reconciler.runOnce()).toBeGreaterThanOrEqual(1);
    expect(files()).toEqual([recorded?.name]);
    const text = readFileSync(join(dir, recorded?.name ?? ""), "utf8");
    expect(text).toBe(sealer.open(recorded?.sealed_content ?? "", achFileAad(recorded?.name ?? "")));
    const file = readNachaFile(text);
    expect(file.batches[0]?.entries.map((e) => [e.amountCents, e.traceNumber])).toEqual([
      [1500, (await statusOf(a))?.["trace_number"]],
      [2500, (await statusOf(b))?.["trace_number"]],
    ]);
    const events = await env.adminSql<{ type: string }[]>`select type from payouts.outbox where payload->'data'->>'id' in (${a}, ${b})`;
    expect(events.map((e) => e.type)).toEqual(["payout.processing", "payout.processing"]);
  });

  it("splits payouts over files by the entry limit, each with the next file id modifier of the day", async () => {
    // Proves PAYOUTS_ACH_FILE_ENTRIES_MAX (2 here), oldest first, modifiers B and C after A, and an empty cut.
    const ids = [await pendingLivePayout(100, 3000), await pendingLivePayout(200, 2000), await pendingLivePayout(300, 1000)];
    const first = await cutFile(svc.deps);
    const second = await cutFile(svc.deps);
    expect(first.payout_ids).toEqual(ids.slice(0, 2));
    expect(second.payout_ids).toEqual(ids.slice(2));
    expect(await cutFile(svc.deps)).toEqual({ file: null, payout_ids: [] });
    const modifiers = files()
      .map((f) => readNachaFile(readFileSync(join(dir, f), "utf8")).fileIdModifier)
      .sort();
    expect(modifiers).toEqual(["A", "B", "C"]);
  });

  it("never claims a sandbox payout, even one made to look pending", async () => {
    // Proves the claim's filter: a sandbox row is left alone by the cut.
    const id = newId("po");
    await env.adminSql`
      insert into payouts.payouts (id, org_id, livemode, participant_id, reference_id, request_hash, amount, fees, fees_paid_by, net_amount, rail, status, ledger_reference, transaction_id)
      values (${id}, 'org_int', false, 'creator_int', ${id}, 'h', 100, 0, 'platform', 100, 'sandbox', 'pending', ${`payout:${id}`}, 'txn_s')`;
    expect(await cutFile(svc.deps)).toEqual({ file: null, payout_ids: [] });
    expect(await statusOf(id)).toMatchObject({ status: "pending", ach_file_id: null, trace_number: null });
  });
});

describe("the reconciler finishes interrupted transitions", () => {
  it("drives a settle and a return left in flight to paid and failed, posting each with its own reference", async () => {
    // Proves the action intents survive a crash before their ledger post: the re-drive posts once each and writes the event.
    const s = await pendingLivePayout(4000);
    const r = await pendingLivePayout(700);
    await cutFile(svc.deps);
    await env.adminSql`update payouts.payouts set action = 'settle', action_at = now() - interval '1 minute' where id = ${s}`;
    await env.adminSql`update payouts.payouts set action = 'return', action_at = now() - interval '1 minute', return_code = 'R02', return_from = 'payouts_in_transit' where id = ${r}`;
    ledger.posted.length = 0;
    expect(await svc.reconciler.runOnce()).toBe(2);
    expect(await statusOf(s)).toMatchObject({ status: "paid", action: null, bank_transfer_status: "settled" });
    expect(await statusOf(r)).toMatchObject({ status: "failed", action: null, bank_transfer_status: "returned" });
    const [failed] = await env.adminSql<{ failure_reason: string }[]>`select failure_reason from payouts.payouts where id = ${r}`;
    expect(failed?.failure_reason).toBe("R02: Account closed");
    expect(ledger.posted.map((p) => [p.kind, p.reference_id, p.postings])).toEqual([
      ["payout_settlement", `payout:${s}:settle`, [{ debit: { system: "payouts_in_transit" }, credit: { system: "platform_cash" }, amount: 4000 }]],
      [
        "payout_return",
        `payout:${r}:return`,
        [{ debit: { system: "payouts_in_transit" }, credit: { wallet_id: "00000000-0000-4000-8000-000000000001" }, amount: 700 }],
      ],
    ]);
    const events = await env.adminSql<{ type: string }[]>`select type from payouts.outbox where payload->'data'->>'id' in (${s}, ${r}) order by seq`;
    expect(events.map((e) => e.type)).toEqual(["payout.processing", "payout.processing", "payout.executed", "payout.failed"]);
    // Nothing left to drive: a second pass posts nothing.
    expect(await svc.reconciler.runOnce()).toBe(0);
    expect(ledger.posted).toHaveLength(2);
  });

  it("drives a cancel of an unfiled payout (never filed meanwhile) and a return that carries the org's fee, capped at the net amount", async () => {
    const c = await pendingLivePayout(900);
    const r = await pendingLivePayout(700);
    const reason = "bank_account_disabled: R02: Account closed";
    expect(await svc.deps.payouts.markAction(c, "cancel", ["pending"], { failure_reason: reason })).toMatchObject({ action: "cancel" });
    expect((await cutFile(svc.deps)).payout_ids).toEqual([r]);
    await svc.deps.payouts.markAction(r, "return", ["processing"], { return_code: "R01", return_from: "payouts_in_transit", return_fee: 2_000 });
    await env.adminSql`update payouts.payouts set action_at = now() - interval '1 minute' where id in (${c}, ${r})`;
    ledger.posted.length = 0;
    expect(await svc.reconciler.runOnce()).toBe(2);
    expect(await statusOf(c)).toMatchObject({ status: "failed", action: null, bank_transfer_status: "cancelled", trace_number: null });
    const [row] = await env.adminSql<
      { failure_reason: string; return_fee: string }[]
    >`select failure_reason, return_fee::text from payouts.payouts where id = ${c}`;
    expect(row?.failure_reason).toBe(reason);
    const wallet = { wallet_id: "00000000-0000-4000-8000-000000000001" };
    expect(ledger.posted.map((p) => [p.kind, p.reference_id, p.postings]).sort()).toEqual(
      [
        ["payout_cancel", `payout:${c}:cancel`, [{ debit: { system: "payouts_in_transit" }, credit: wallet, amount: 900 }]],
        [
          "payout_return",
          `payout:${r}:return`,
          [
            { debit: { system: "payouts_in_transit" }, credit: wallet, amount: 700 },
            { debit: wallet, credit: { system: "platform_revenue" }, amount: 700 },
          ],
        ],
      ].sort(),
    );
    // A cancel applies only to an unfiled payout: the database refuses one on a filed payout.
    await expect(env.adminSql`update payouts.payouts set action = 'cancel' where id = ${r}`).rejects.toThrow(/payouts_action_states/);
  });
});
