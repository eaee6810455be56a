// Proves the payouts operator commands over real NATS and PostgreSQL, sent as the admin CLI sends them: cut-file,
// settle and ingest-returns answer what the rail did and each attempt, failed ones included, is recorded in
// payouts.audit_log with the payouts it touched; and `admin find`'s rows of a payout (its file, the ledger
// references of its steps) and of a participant (bank account, latest payouts).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_FANOUT_OPERATIONS, adminOperation, newRequestId, rpcSubject, type FindHit, type FindRowsReply, type RpcReply } from "@treasury/contracts";
import { generateKeyRingEntry, parseKeyRing, rpcCall, Sealer } from "@treasury/service-kit";
import { allowRisk, makeScratchDir, setupTestEnv, type TestEnv } from "@treasury/testing";
import {
  insertLiveBankAccount,
  insertPendingLivePayout,
  LIVE_ORG,
  LIVE_PARTICIPANT,
  ORIGIN,
  startLedgerStandIn,
  type LedgerStandIn,
} from "../../test/live-rail.ts";
import { buildReturnFile, readNachaFile } from "../../test/nacha-reader.ts";
import { achDropRail } from "../adapters/bank-rail.ts";
import { buildPayouts, type PayoutsService } from "../service.ts";
import { bankAccountAad, type SealedBankDetails } from "../usecases/deps.ts";

const RPC_TIMEOUT_TEST_MS = 30_000;

let env: TestEnv;
let svc: PayoutsService;
let dir: string;
let sealer: Sealer;
let ledger: LedgerStandIn;
let nc: NatsConnection;

beforeAll(async () => {
  env = await setupTestEnv();
  dir = makeScratchDir("payouts-admin-int-");
  const ring = parseKeyRing(generateKeyRingEntry("a1"));
  sealer = new Sealer(ring);
  ledger = await startLedgerStandIn(env);
  svc = await buildPayouts(env.env("payouts", { PAYOUTS_ACH_CUT_INTERVAL_MS: "0", PAYOUTS_RECONCILE_INTERVAL_MS: "600000" }), {
    keyRing: ring,
    rail: achDropRail({ dir, origin: ORIGIN }),
    risk: allowRisk,
  });
  await svc.start();
  nc = await env.nats();
});
afterAll(async () => {
  await svc?.stop();
  await ledger?.close();
  await env?.cleanup();
});

/** One command as the CLI sends it, with the request id its audit row keeps. */
async function admin(command: string, request: Record<string, unknown> = {}, requestId = newRequestId()): Promise<RpcReply> {
  const payload = { actor: "ops:alice", flags: {}, ...request };
  return rpcCall(nc, rpcSubject(env.prefix, "payouts", adminOperation(command)), payload, { timeoutMs: RPC_TIMEOUT_TEST_MS, requestId });
}

function body(reply: RpcReply): Record<string, unknown> {
  if (!reply.ok) throw new Error(`expected success, got ${reply.error.code}: ${reply.error.message}`);
  return reply.body;
}

function error(reply: RpcReply): { code: string; message: string } {
  if (reply.ok) throw new Error(`expected an error, got ${JSON.stringify(reply.body)}`);
  return reply.error;
}

async function auditRows(action: string): Promise<Record<string, unknown>[]> {
  return env.adminSql`
    select actor, action, org_id, livemode, target_ids, reason, outcome, error_code, error, details from payouts.audit_log where action = ${action} order by id`;
}

async function findRows(nodes: unknown[], seed = false): Promise<FindRowsReply> {
  const reply = await rpcCall(nc, rpcSubject(env.prefix, "payouts", ADMIN_FANOUT_OPERATIONS.findRows), { nodes, seed }, { timeoutMs: RPC_TIMEOUT_TEST_MS });
  return body(reply) as unknown as FindRowsReply;
}

const pendingLivePayout = (amount: number) => insertPendingLivePayout(env, sealer, amount);

/** Cuts the waiting payouts into a file; its name and text. */
async function cut(): Promise<{ name: string; text: string; payoutIds: string[] }> {
  const answer = body(await admin("payouts cut-file")) as { file: { name: string }; payout_ids: string[] };
  return { name: answer.file.name, text: readFileSync(join(dir, answer.file.name), "utf8"), payoutIds: answer.payout_ids };
}

describe("payouts cut-file", () => {
  it("files the waiting live payouts and records the file and the payouts it holds", async () => {
    const a = await pendingLivePayout(1500);
    const b = await pendingLivePayout(2500);
    const requestId = newRequestId();
    const answer = body(await admin("payouts cut-file", { reason: "daily cut" }, requestId)) as {
      file: { name: string; entry_count: number };
      payout_ids: string[];
    };
    expect(answer.payout_ids.sort()).toEqual([a, b].sort());
    expect(answer.file).toMatchObject({ entry_count: 2, total_credit_cents: 4000 });
    expect(readNachaFile(readFileSync(join(dir, answer.file.name), "utf8")).batches[0]?.entries).toHaveLength(2);
    const [row] = await auditRows("payouts.cut-file");
    expect(row).toMatchObject({ actor: "ops:alice", org_id: null, livemode: true, reason: "daily cut", outcome: "succeeded", error_code: null, error: null });
    expect((row?.["target_ids"] as string[]).sort()).toEqual([a, b].sort());
    expect(row?.["details"]).toEqual({ file: answer.file.name, entry_count: 2, total_credit_cents: 4000, request_id: requestId });
  });
});

describe("payouts settle", () => {
  it("refuses a missing or malformed date, recording the attempt, and pays the payouts filed before the date", async () => {
    expect(error(await admin("payouts settle"))).toMatchObject({ code: "validation_error", message: "missing --date" });
    expect(error(await admin("payouts settle", { flags: { date: "2024-13-01" } }))).toMatchObject({
      code: "validation_error",
      message: "Invalid body: date: must be a real date",
    });
    const p = await pendingLivePayout(700);
    await cut();
    const answer = body(await admin("payouts settle", { flags: { date: "2999-01-01" } })) as { settled: string[]; pending: unknown[] };
    expect(answer.settled).toContain(p);
    expect(answer.pending).toEqual([]);
    expect(ledger.posted.map((r) => r.reference_id)).toContain(`payout:${p}:settle`);
    const rows = await auditRows("payouts.settle");
    expect(rows.map((r) => [r["outcome"], r["error_code"], r["error"], (r["details"] as { date: unknown }).date])).toEqual([
      ["failed", "validation_error", "missing --date", null],
      ["failed", "validation_error", "Invalid body: date: must be a real date", "2024-13-01"],
      ["succeeded", null, null, "2999-01-01"],
    ]);
    expect(rows[2]).toMatchObject({ livemode: true, target_ids: answer.settled });
  });
});

describe("payouts ingest-returns", () => {
  it("fails the payouts a return file names, and refuses a request without a file", async () => {
    expect(error(await admin("payouts ingest-returns"))).toMatchObject({ code: "validation_error", message: "missing FILE" });
    const p = await pendingLivePayout(900);
    const file = await cut();
    const [row] = await env.adminSql<{ trace_number: string }[]>`select trace_number from payouts.payouts where id = ${p}`;
    const content = buildReturnFile(readNachaFile(file.text), [{ trace: row?.trace_number ?? "", code: "R03" }]);
    const answer = body(await admin("payouts ingest-returns", { positionals: ["returns/r1.ach"], file: { name: "returns/r1.ach", content } }));
    expect(answer).toMatchObject({ failed: [{ payout_id: p, trace_number: row?.trace_number, return_code: "R03" }], unmatched: [], pending: [] });
    const [failed] = await env.adminSql<{ status: string }[]>`select status from payouts.payouts where id = ${p}`;
    expect(failed?.status).toBe("failed");
    const rows = await auditRows("payouts.ingest-returns");
    expect(rows).toMatchObject([
      { outcome: "failed", error: "missing FILE", target_ids: [], details: { file: null, unmatched: null } },
      { outcome: "succeeded", livemode: true, target_ids: [p], details: { file: "returns/r1.ach", unmatched: 0 } },
    ]);
  });
});

describe("payouts ingest-returns: notifications of change and unusable accounts", () => {
  const live = { orgId: LIVE_ORG, livemode: true };

  /** A gateway read as the org's live key. */
  async function bankAccountOf(participantId: string): Promise<Record<string, unknown>> {
    const auth = { org_id: LIVE_ORG, livemode: true, key_id: "key_live", scopes: ["read"], request_id: newRequestId() };
    const reply = await rpcCall(
      nc,
      rpcSubject(env.prefix, "payouts", "getBankAccount"),
      { auth, params: { participant_id: participantId }, query: {}, body: {} },
      {
        timeoutMs: RPC_TIMEOUT_TEST_MS,
      },
    );
    return body(reply)["bank_account"] as Record<string, unknown>;
  }

  async function sealedAccountNumber(participantId: string): Promise<string> {
    const [row] = await env.adminSql<
      { sealed: string }[]
    >`select sealed from payouts.bank_accounts where org_id = ${LIVE_ORG} and participant_id = ${participantId}`;
    return sealer.openJson<SealedBankDetails>(row?.sealed ?? "", bankAccountAad(live, participantId)).account_number;
  }

  const snapshot = async () => ({
    accounts: await env.adminSql`select * from payouts.bank_accounts where org_id = ${LIVE_ORG} and participant_id in ('noc_c01', 'ret_r03') order by id`,
    outbox: await env.adminSql`select id from payouts.outbox order by id`,
    posted: ledger.posted.length,
  });

  it("a C01 corrects the sealed account number; an R03 of a paid payout fails it, returns the money and disables the account; again changes nothing", async () => {
    await insertLiveBankAccount(env, sealer, "noc_c01");
    await insertLiveBankAccount(env, sealer, "ret_r03");
    const noticed = await insertPendingLivePayout(env, sealer, 1100, new Date(), "noc_c01");
    const returned = await insertPendingLivePayout(env, sealer, 2300, new Date(), "ret_r03");
    const file = await cut();
    body(await admin("payouts settle", { flags: { date: "2999-01-01" } }));
    const traces = await env.adminSql<{ id: string; trace_number: string; status: string }[]>`
      select id, trace_number, status from payouts.payouts where id in (${noticed}, ${returned})`;
    expect(traces.map((t) => t.status)).toEqual(["paid", "paid"]);
    const trace = (id: string) => traces.find((t) => t.id === id)?.trace_number ?? "";
    const content = buildReturnFile(
      readNachaFile(file.text),
      [{ trace: trace(returned), code: "R03" }],
      [
        { trace: trace(noticed), code: "C01", correctedData: "55501234" },
        { trace: trace(noticed), code: "C09", correctedData: "NEWID" },
      ],
    );
    const request = { positionals: ["returns/noc.ach"], file: { name: "returns/noc.ach", content } };
    const answer = body(await admin("payouts ingest-returns", request));
    expect(answer).toMatchObject({
      failed: [{ payout_id: returned, return_code: "R03", bank_account_disabled: true }],
      unmatched: [],
      pending: [],
      notices: [
        { outcome: "applied", payout_id: noticed, participant_id: "noc_c01", change_code: "C01", changed: ["account_number"], account: { last4: "1234" } },
        { outcome: "not_applied", change_code: "C09", reason: expect.stringMatching(/corrects nothing/) },
      ],
    });

    // The C01: read back through the service, and the sealed value opens to the corrected number.
    expect(await bankAccountOf("noc_c01")).toMatchObject({ last4: "1234", routing_number: "011000015", account_type: "checking", status: "active" });
    expect(await sealedAccountNumber("noc_c01")).toBe("55501234");
    // The R03: failed, the money back from cash through the return posting, the account disabled.
    const [failed] = await env.adminSql<
      { status: string; failure_reason: string }[]
    >`select status, failure_reason from payouts.payouts where id = ${returned}`;
    expect(failed).toEqual({ status: "failed", failure_reason: "R03: No account or unable to locate account" });
    const back = ledger.posted.find((r) => r.reference_id === `payout:${returned}:return`);
    expect(back).toMatchObject({ kind: "payout_return" });
    expect(JSON.stringify(back?.postings)).toContain("platform_cash");
    expect(await bankAccountOf("ret_r03")).toMatchObject({ status: "disabled", disabled_reason: expect.stringMatching(/^R03: /), last4: "6789" });
    const events = await env.adminSql<{ type: string; participant: string; status: string | null }[]>`
      select type, payload->'data'->>'participant_id' as participant, payload->'data'->>'status' as status
        from payouts.outbox where type in ('bank_account.updated', 'payout.failed') and payload->'data'->>'participant_id' in ('noc_c01', 'ret_r03') order by type, 2`;
    expect(events).toEqual([
      { type: "bank_account.updated", participant: "noc_c01", status: "active" },
      { type: "bank_account.updated", participant: "ret_r03", status: "disabled" },
      { type: "payout.failed", participant: "ret_r03", status: "failed" },
    ]);

    // The audit row lists the notices applied, with last four digits only: no account number anywhere.
    const rows = await auditRows("payouts.ingest-returns");
    const row = rows[rows.length - 1];
    expect(row).toMatchObject({
      outcome: "succeeded",
      details: {
        file: "returns/noc.ach",
        notices_applied: [{ payout_id: noticed, participant_id: "noc_c01", change_code: "C01", changed: ["account_number"], last4: "1234" }],
        notices_not_applied: [{ change_code: "C09" }],
        bank_accounts_disabled: [{ payout_id: returned, return_code: "R03" }],
      },
    });
    expect(row?.["target_ids"]).toEqual(expect.arrayContaining([returned, noticed]));
    expect(JSON.stringify(rows)).not.toMatch(/55501234|000123456789/);

    // The same file again changes nothing: no post, no event, no account change.
    const before = await snapshot();
    const again = body(await admin("payouts ingest-returns", request));
    expect(again).toMatchObject({
      failed: [],
      already_failed: [returned],
      notices: [{ outcome: "already_applied", payout_id: noticed }, { outcome: "not_applied" }],
    });
    expect(await snapshot()).toEqual(before);
  });
});

describe("admin.find.rows", () => {
  const tables = (hits: FindHit[]) => hits.map((h) => [h.table, h.follow]);

  it("answers a payout with its file and the ledger references of its steps, without sealed values", async () => {
    const p = await pendingLivePayout(1200);
    await cut();
    const found = await findRows([{ kind: "payout", id: p }]);
    expect(tables(found.hits)).toEqual([
      ["payouts.payouts", true],
      ["payouts.ach_files", false],
    ]);
    const [payout, achFile] = found.hits.map((h) => h.row);
    expect(payout).toMatchObject({ id: p, org_id: LIVE_ORG, livemode: true, status: "processing", amount: 1200 });
    expect(payout).not.toHaveProperty("dest_sealed");
    expect(payout).not.toHaveProperty("request_hash");
    expect(achFile?.["id"]).toBe(payout?.["ach_file_id"]);
    expect(achFile).not.toHaveProperty("sealed_content");
    const scope = { orgId: LIVE_ORG, livemode: true };
    expect(found.nodes).toEqual([
      { kind: "ledger_reference", id: `payout|payout:${p}`, scope },
      { kind: "ledger_reference", id: `payout_settlement|payout:${p}:settle`, scope },
      { kind: "ledger_reference", id: `payout_return|payout:${p}:return`, scope },
      { kind: "risk_key", id: `payout:${String(payout?.["reference_id"])}`, scope },
      { kind: "payout", id: p, scope },
    ]);
    // Asked with its scope already, the payout is not handed back as a new node.
    expect((await findRows([{ kind: "payout", id: p, scope }])).nodes.map((n) => n.kind)).toEqual([
      "ledger_reference",
      "ledger_reference",
      "ledger_reference",
      "risk_key",
    ]);
  });

  it("answers a participant's lists (bank account, latest payouts) only within its org and environment", async () => {
    await env.adminSql`
      insert into payouts.bank_accounts (id, org_id, livemode, participant_id, routing_number, account_type, last4, sealed, sealed_key_id)
      values ('ba_admin_int', ${LIVE_ORG}, true, ${LIVE_PARTICIPANT}, '011000015', 'checking', '6789', 'not.opened.here', 'a1')`;
    const scope = { orgId: LIVE_ORG, livemode: true };
    const found = await findRows([{ kind: "participant_lists", id: LIVE_PARTICIPANT, scope }], true);
    const accounts = found.hits.filter((h) => h.table === "payouts.bank_accounts");
    expect(accounts).toEqual([{ table: "payouts.bank_accounts", follow: false, row: expect.objectContaining({ id: "ba_admin_int", last4: "6789" }) }]);
    expect(accounts[0]?.row).not.toHaveProperty("sealed");
    const payouts = found.hits.filter((h) => h.table === "payouts.payouts");
    expect(payouts.length).toBeGreaterThan(0);
    expect(payouts.every((h) => !h.follow && h.row["participant_id"] === LIVE_PARTICIPANT && !("dest_sealed" in h.row))).toBe(true);
    expect(found.nodes).toEqual([]);
    expect(await findRows([{ kind: "participant_lists", id: LIVE_PARTICIPANT }], true)).toEqual({ hits: [], nodes: [] });
    expect(await findRows([{ kind: "participant_lists", id: LIVE_PARTICIPANT, scope: { orgId: LIVE_ORG, livemode: false } }], true)).toEqual({
      hits: [],
      nodes: [],
    });
  });
});
