// Live payouts end to end on the real ACH rail: eligibility blockers, then a verified creator with a bank
// account; payouts cut into a NACHA file by `admin payouts cut-file` (read back by an independent reader and its
// totals checked), settled by `admin payouts settle`, and failed by a bank return file (`admin payouts
// ingest-returns`) with the money back in the wallet, less the org's return fee, and the unfiled payouts into an
// account a return disabled cancelled; a sandbox payout never enters a file.
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "@treasury/testing";
import { checkInvariants } from "../../services/ledger/src/verify/invariants.ts";
import { buildReturnFile, readNachaFile } from "../../services/payouts/test/nacha-reader.ts";
import {
  admin,
  apiOf,
  BANK_ACCOUNT,
  creatorWallet,
  fund,
  newParticipant,
  startPayoutsStack,
  verifyBusiness,
  verifyCreator,
  type Api,
  type PayoutsStack,
} from "./payouts-stack.ts";

let p: PayoutsStack;
let api: Api;
let live: string;

beforeAll(async () => {
  p = await startPayoutsStack({ payoutsEnv: { PAYOUTS_ACH_SETTLEMENT_DAYS: "2" } });
  api = apiOf(p);
  live = p.s.liveKey;
}, 120_000);
afterAll(async () => {
  await p?.stop();
});

type Payout = Record<string, unknown> & { id: string; status: string; bank_transfer_id: string | null; transaction_id: string };
const payoutOf = (r: { body: Record<string, unknown> }) => r.body["payout"] as Payout;

async function entriesOf(reference: string): Promise<Array<[string, string, number]>> {
  const rows = await p.env.adminSql<Array<{ account_type: string; entry_type: string; amount: string }>>`
    select a.account_type, e.entry_type, e.amount::text as amount
      from ledger.entries e join ledger.accounts a on a.id = e.account_id join ledger.transactions t on t.id = e.transaction_id
     where t.reference_id = ${reference} order by e.seq`;
  return rows.map((r) => [r.account_type, r.entry_type, Number(r.amount)]);
}
async function eventsOf(id: string): Promise<string[]> {
  const rows = await p.env.adminSql<{ type: string }[]>`select type from payouts.outbox where payload->'data'->>'id' = ${id} order by seq`;
  return rows.map((r) => r.type);
}
const achFiles = () =>
  readdirSync(p.achDir)
    .filter((f) => f.endsWith(".ach"))
    .sort();
const isoDay = (offsetDays: number) => new Date(Date.now() + offsetDays * 86_400_000).toISOString().slice(0, 10);

describe("live payouts on the ACH rail", () => {
  let pid: string;

  it("blocks a creator who is not verified, and lets one who is", { timeout: 60_000 }, async () => {
    // Proves the live eligibility rules one by one: each blocker listed, the payout refused with them, none once all are met.
    pid = await newParticipant(api, live, "live_creator");
    await fund(api, live, pid, 20_000);
    const blocked = await api("GET", `/v1/participants/${pid}/payout-eligibility`, live);
    expect(blocked.body["eligibility"]).toMatchObject({
      eligible: false,
      available_balance_cents: 20_000,
      issues: ["kyc_not_approved", "tax_not_certified", "no_bank_account", "org_payouts_disabled"],
      requirements: {
        environment: "live",
        kyc_approved: { required: true, met: false, status: "pending" },
        creator_access_active: { required: true, met: true, status: "active" },
      },
    });
    const refused = await api("POST", "/v1/payouts", live, { participant_id: pid, amount: 100, reference_id: `blocked_${pid}` });
    expect(refused.status).toBe(422);
    expect(refused.body).toMatchObject({
      error_code: "payout_not_eligible",
      eligibility: { issues: ["kyc_not_approved", "tax_not_certified", "no_bank_account", "org_payouts_disabled"] },
    });
    expect(String(refused.body["hint"])).toContain("payout-eligibility");

    await verifyBusiness(p, api, live);
    await verifyCreator(p, api, live, pid);
    expect((await api("GET", `/v1/participants/${pid}/payout-eligibility`, live)).body["eligibility"]).toMatchObject({ issues: ["no_bank_account"] });
    expect((await api("PUT", `/v1/participants/${pid}/bank-account`, live, BANK_ACCOUNT)).status).toBe(201);
    const ready = await api("GET", `/v1/participants/${pid}/payout-eligibility`, live);
    expect(ready.body["eligibility"]).toMatchObject({
      eligible: true,
      issues: [],
      requirements: { bank_account: { met: true, last4: "6789" }, org_payouts_enabled: { met: true, business_verification_status: "approved" } },
    });
  });

  it("files payouts into a NACHA file, settles them, and fails a returned one with the money back", { timeout: 180_000 }, async () => {
    // Proves the live path end to end: pending → processing (file written, parsed back, totals checked) → paid, a return → failed.
    const sandboxPid = await newParticipant(api, p.s.testKey, "sandbox_creator");
    await fund(api, p.s.testKey, sandboxPid, 1000);
    const sandbox = payoutOf(await api("POST", "/v1/payouts", p.s.testKey, { participant_id: sandboxPid, amount: 700, reference_id: `sbx_${sandboxPid}` }));
    expect(sandbox.status).toBe("paid");

    const a = await api("POST", "/v1/payouts", live, { participant_id: pid, amount: 5000, reference_id: `a_${pid}`, fees: 100, fees_paid_by: "creator" });
    expect(a.status, JSON.stringify(a.body)).toBe(201);
    expect(payoutOf(a)).toMatchObject({
      status: "pending",
      payout_rail: "bank_ach",
      simulated: false,
      livemode: true,
      gross_amount_cents: 5000,
      fees_cents: 100,
      net_amount_cents: 4900,
      previous_balance_cents: 20_000,
      new_balance_cents: 15_000,
      bank_transfer_id: null,
      bank_transfer_status: "awaiting_file",
      destination: { type: "bank_account", routing_number: "011000015", account_type: "checking", last4: "6789" },
    });
    const b = payoutOf(
      await api("POST", "/v1/payouts", live, { participant_id: pid, amount: 3000, reference_id: `b_${pid}`, fees: 25, description: "Payout for March" }),
    );
    const c = payoutOf(await api("POST", "/v1/payouts", live, { participant_id: pid, amount: 2000, reference_id: `c_${pid}` }));
    expect((await creatorWallet(api, live, pid)).balance).toBe(10_000);
    // The wallet's money waits in transit until the bank pays.
    expect(await entriesOf(`payout:${payoutOf(a).id}`)).toEqual([
      ["creator_earnings", "debit", 4900],
      ["payouts_in_transit", "credit", 4900],
      ["creator_earnings", "debit", 100],
      ["platform_revenue", "credit", 100],
    ]);
    const ids = [payoutOf(a).id, b.id, c.id];

    const cut = await admin(p, "payouts", "cut-file");
    expect(cut.code, JSON.stringify(cut.err)).toBe(0);
    expect(cut.out).toMatchObject({ payout_ids: ids, file: { entry_count: 3, total_credit_cents: 4900 + 3000 + 2000 } });
    const [name] = achFiles();
    expect(achFiles()).toHaveLength(1);
    expect((cut.out["file"] as { location: string }).location).toBe(join(p.achDir, name ?? ""));
    const file = readNachaFile(readFileSync(join(p.achDir, name ?? ""), "utf8"));
    expect(file.immediateDestination).toBe("091000019");
    expect(file.control).toMatchObject({
      batchCount: 1,
      entryAddendaCount: 4,
      totalCredit: 9900,
      totalDebit: 0,
      entryHash: String(3 * 1_100_001).padStart(10, "0"),
    });
    const entries = file.batches[0]?.entries ?? [];
    expect(file.batches[0]).toMatchObject({ secCode: "PPD", serviceClass: "220", companyId: "1987654321", entryDescription: "PAYOUT", odfi: "09100001" });
    expect(entries.map((e) => [e.transactionCode, e.receivingDfi + e.checkDigit, e.accountNumber, e.amountCents, e.individualName])).toEqual([
      ["22", "011000015", "000123456789", 4900, "ADA LOVELACE"],
      ["22", "011000015", "000123456789", 3000, "ADA LOVELACE"],
      ["22", "011000015", "000123456789", 2000, "ADA LOVELACE"],
    ]);
    expect(entries[1]?.addenda.map((x) => x.info)).toEqual(["PAYOUT FOR MARCH"]);
    const filed = await Promise.all(ids.map(async (id) => payoutOf(await api("GET", `/v1/payouts/${id}`, live))));
    expect(filed.map((x) => [x.status, x.bank_transfer_id, x["bank_transfer_status"]])).toEqual(entries.map((e) => ["processing", e.traceNumber, "submitted"]));
    // The sandbox payout was never filed, and the file's text is sealed at rest.
    const [sbxRow] = await p.env.adminSql<
      { ach_file_id: string | null; trace_number: string | null }[]
    >`select ach_file_id, trace_number from payouts.payouts where id = ${sandbox.id}`;
    expect(sbxRow).toEqual({ ach_file_id: null, trace_number: null });
    const [stored] = await p.env.adminSql<{ sealed_content: string }[]>`select sealed_content from payouts.ach_files`;
    expect(stored?.sealed_content).not.toContain("000123456789");
    // Nothing is left to file.
    expect((await admin(p, "payouts", "cut-file")).out).toEqual({ file: null, payout_ids: [] });

    // Settlement waits for the window (2 days), then pays all three.
    expect((await admin(p, "payouts", "settle", "--date", isoDay(1))).out).toMatchObject({ settled: [] });
    const settled = await admin(p, "payouts", "settle", "--date", isoDay(2));
    expect(settled.code, JSON.stringify(settled.err)).toBe(0);
    expect([...(settled.out["settled"] as string[])].sort()).toEqual([...ids].sort());
    expect(await entriesOf(`payout:${b.id}:settle`)).toEqual([
      ["payouts_in_transit", "debit", 3000],
      ["platform_cash", "credit", 3000],
    ]);
    for (const id of ids) expect(await eventsOf(id)).toEqual(["payout.created", "payout.processing", "payout.executed"]);

    // The bank returns B (account not found) after it settled: B fails, its 3000 comes back from cash.
    const returnsPath = join(p.achDir, "returns-1.txt");
    writeFileSync(
      returnsPath,
      buildReturnFile(file, [
        { trace: entries[1]?.traceNumber ?? "", code: "R03" },
        { trace: "091000010999999", code: "R02", unknownAmountCents: 1234 },
      ]),
    );
    const ingested = await admin(p, "payouts", "ingest-returns", returnsPath);
    expect(ingested.code, JSON.stringify(ingested.err)).toBe(0);
    expect(ingested.out).toMatchObject({
      returns: 2,
      failed: [{ payout_id: b.id, return_code: "R03" }],
      unmatched: [{ trace_number: "091000010999999", return_code: "R02" }],
      already_failed: [],
    });
    const failedB = payoutOf(await api("GET", `/v1/payouts/${b.id}`, live));
    expect(failedB).toMatchObject({ status: "failed", failure_reason: "R03: No account or unable to locate account", bank_transfer_status: "returned" });
    expect(await entriesOf(`payout:${b.id}:return`)).toEqual([
      ["platform_cash", "debit", 3000],
      ["creator_earnings", "credit", 3000],
    ]);
    expect(await eventsOf(b.id)).toEqual(["payout.created", "payout.processing", "payout.executed", "payout.failed"]);
    expect((await creatorWallet(api, live, pid)).balance).toBe(13_000);
    // The same file again changes nothing.
    const again = await admin(p, "payouts", "ingest-returns", returnsPath);
    expect(again.out).toMatchObject({ failed: [], already_failed: [b.id] });
    expect((await creatorWallet(api, live, pid)).balance).toBe(13_000);
    // R03 says the account does not exist: it is disabled, and live payouts are refused until a new one is set.
    expect((await api("GET", `/v1/participants/${pid}/bank-account`, live)).body["bank_account"]).toMatchObject({ status: "disabled" });
    const refusedAfterReturn = await api("POST", "/v1/payouts", live, { participant_id: pid, amount: 100, reference_id: `r03_${pid}` });
    expect(refusedAfterReturn.body).toMatchObject({ error_code: "payout_not_eligible", eligibility: { issues: ["bank_account_disabled"] } });
    expect((await api("PUT", `/v1/participants/${pid}/bank-account`, live, BANK_ACCOUNT)).body["bank_account"]).toMatchObject({ status: "active" });

    // A return before settlement (R01) takes the money back from in transit, creator-paid fee included.
    const d = payoutOf(
      await api("POST", "/v1/payouts", live, { participant_id: pid, amount: 1500, reference_id: `d_${pid}`, fees: 50, fees_paid_by: "creator" }),
    );
    expect((await admin(p, "payouts", "cut-file")).out).toMatchObject({ payout_ids: [d.id] });
    const second = readNachaFile(readFileSync(join(p.achDir, achFiles()[1] ?? ""), "utf8"));
    expect(second.fileIdModifier).toBe("B");
    expect(second.control).toMatchObject({ totalCredit: 1450, entryAddendaCount: 1 });
    const returns2 = join(p.achDir, "returns-2.txt");
    writeFileSync(returns2, buildReturnFile(second, [{ trace: second.batches[0]?.entries[0]?.traceNumber ?? "", code: "R01" }]));
    expect((await admin(p, "payouts", "ingest-returns", returns2)).out).toMatchObject({ failed: [{ payout_id: d.id, return_code: "R01" }] });
    expect(payoutOf(await api("GET", `/v1/payouts/${d.id}`, live))).toMatchObject({ status: "failed", failure_reason: "R01: Insufficient funds" });
    expect(await entriesOf(`payout:${d.id}:return`)).toEqual([
      ["payouts_in_transit", "debit", 1450],
      ["creator_earnings", "credit", 1450],
      ["platform_revenue", "debit", 50],
      ["creator_earnings", "credit", 50],
    ]);
    expect((await creatorWallet(api, live, pid)).balance).toBe(13_000);
    expect((await api("GET", `/v1/payouts?participant_id=${pid}&status=failed`, live)).body["total"]).toBe(2);

    await waitFor(
      async () => Number((await p.env.adminSql<{ n: string }[]>`select count(*)::text as n from payouts.outbox where published_at is null`)[0]?.n) === 0,
      { timeoutMs: 15_000 },
    );
    const report = await checkInvariants(p.env.adminSql, { orgId: p.s.orgId });
    expect(report.violations).toEqual([]);
  });

  it("an unusable-account return charges the org's return fee and cancels the unfiled payouts into that account", { timeout: 120_000 }, async () => {
    // Proves the return fee (set by an operator, audited) and the cancel of what would only bounce too.
    const fee = await admin(p, "payouts", "set-return-fee", "--org", p.s.orgId, "--env", "live", "--cents", "250", "--reason", "contract 4.2");
    expect(fee, JSON.stringify(fee.err)).toMatchObject({ code: 0, out: { org_id: p.s.orgId, environment: "live", return_fee_cents: 250 } });
    expect((await admin(p, "payouts", "get-return-fee", "--org", p.s.orgId, "--env", "live")).out).toMatchObject({ return_fee_cents: 250 });
    expect(await admin(p, "payouts", "set-return-fee", "--org", p.s.orgId, "--env", "live", "--cents", "12.5", "--reason", "x")).toMatchObject({
      code: 1,
      err: { error_code: "validation_error" },
    });
    const before = (await creatorWallet(api, live, pid)).balance;
    const e = payoutOf(await api("POST", "/v1/payouts", live, { participant_id: pid, amount: 1000, reference_id: `e_${pid}` }));
    expect((await admin(p, "payouts", "cut-file")).out).toMatchObject({ payout_ids: [e.id] });
    const f = payoutOf(await api("POST", "/v1/payouts", live, { participant_id: pid, amount: 800, reference_id: `f_${pid}` }));
    expect(f).toMatchObject({ status: "pending", bank_transfer_status: "awaiting_file" });

    const file = readNachaFile(readFileSync(join(p.achDir, achFiles().at(-1) ?? ""), "utf8"));
    const returns = join(p.achDir, "returns-3.txt");
    writeFileSync(returns, buildReturnFile(file, [{ trace: file.batches[0]?.entries[0]?.traceNumber ?? "", code: "R02" }]));
    const ingested = await admin(p, "payouts", "ingest-returns", returns);
    expect(ingested.out).toMatchObject({
      failed: [{ payout_id: e.id, return_code: "R02", bank_account_disabled: true }],
      cancelled: [{ payout_id: f.id, participant_id: pid }],
    });
    expect(await entriesOf(`payout:${e.id}:return`)).toEqual([
      ["payouts_in_transit", "debit", 1000],
      ["creator_earnings", "credit", 1000],
      ["creator_earnings", "debit", 250],
      ["platform_revenue", "credit", 250],
    ]);
    expect(await entriesOf(`payout:${f.id}:cancel`)).toEqual([
      ["payouts_in_transit", "debit", 800],
      ["creator_earnings", "credit", 800],
    ]);
    expect(payoutOf(await api("GET", `/v1/payouts/${f.id}`, live))).toMatchObject({
      status: "failed",
      bank_transfer_status: "cancelled",
      bank_transfer_id: null,
      failure_reason: expect.stringMatching(/^bank_account_disabled: R02/),
    });
    expect(await eventsOf(f.id)).toEqual(["payout.created", "payout.failed"]);
    expect((await creatorWallet(api, live, pid)).balance).toBe(before - 250);
    // The cancelled payout is never filed afterwards.
    expect((await admin(p, "payouts", "cut-file")).out).toEqual({ file: null, payout_ids: [] });
    const report = await checkInvariants(p.env.adminSql, { orgId: p.s.orgId });
    expect(report.violations).toEqual([]);
    expect((await api("PUT", `/v1/participants/${pid}/bank-account`, live, BANK_ACCOUNT)).body["bank_account"]).toMatchObject({ status: "active" });
    // The operator's flags reach the service: a run at a given time answers its counts.
    expect(await admin(p, "payouts", "run-schedules", "--at", new Date().toISOString(), "--reason", "check")).toMatchObject({
      code: 0,
      out: { runs: expect.any(Number) },
    });
  });

  it("the admin commands refuse bad input with an error and a non-zero exit", { timeout: 60_000 }, async () => {
    // Proves a bad date, a file that is not a NACHA file and a missing file argument are errors that move nothing.
    const junk = join(p.achDir, "junk.txt");
    writeFileSync(junk, "this is not an ACH file\n");
    const before = await p.env.adminSql<{ n: string }[]>`select count(*)::text as n from ledger.transactions`;
    expect(await admin(p, "payouts", "settle", "--date", "2026-13-45")).toMatchObject({ code: 1, err: { error_code: "validation_error" } });
    expect(await admin(p, "payouts", "ingest-returns", junk)).toMatchObject({ code: 1, err: { error_code: "validation_error" } });
    expect((await admin(p, "payouts", "ingest-returns")).code).toBe(1);
    expect((await admin(p, "payouts", "settle")).err["error"]).toBe("missing --date");
    expect(await p.env.adminSql<{ n: string }[]>`select count(*)::text as n from ledger.transactions`).toEqual(before);
  });

  it("a sandbox payout can never be put into a file", async () => {
    // Proves the cut never picks a sandbox row even when one is made to look pending, and the table refuses filing it.
    const sandboxPid = await newParticipant(api, p.s.testKey, "sandbox_never");
    await fund(api, p.s.testKey, sandboxPid, 500);
    const sbx = payoutOf(await api("POST", "/v1/payouts", p.s.testKey, { participant_id: sandboxPid, amount: 500, reference_id: `never_${sandboxPid}` }));
    await p.env.adminSql`update payouts.payouts set status = 'pending' where id = ${sbx.id}`;
    const before = achFiles().length;
    expect((await admin(p, "payouts", "cut-file")).out).toEqual({ file: null, payout_ids: [] });
    expect(achFiles()).toHaveLength(before);
    await expect(
      p.env
        .adminSql`update payouts.payouts set status = 'processing', ach_file_id = (select min(id) from payouts.ach_files), trace_number = '091000010000999' where id = ${sbx.id}`,
    ).rejects.toThrow(/payouts_sandbox_never_filed|payouts_rail/);
    await p.env.adminSql`update payouts.payouts set status = 'paid' where id = ${sbx.id}`;
  });
});
