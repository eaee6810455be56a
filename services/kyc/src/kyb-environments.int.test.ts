// Proves that business verification (KYB) is kept per organisation and environment: a sandbox submission gets a
// sandbox record and never changes the live one that live payout eligibility reads, operators' decisions act on
// the environment they concern, and the audit trail records that environment.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { internalSubject, type AuthContext } from "@treasury/contracts";
import { rpcCall } from "@treasury/service-kit";
import { connect } from "@nats-io/transport-node";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { natsOptions, repoRoot } from "@treasury/testing";
import { pgKycStore } from "./store/verifications.ts";
import { listVerifications, reviewSubmission, showSubmission } from "./usecases/review.ts";
import { authFor, businessBody, err, newOrg, ok, startKyc, type KycHarness } from "./test-support.ts";

let h: KycHarness;

beforeAll(async () => {
  h = await startKyc();
});
afterAll(async () => {
  await h?.close();
});

type Profile = { status: string; tax_certified: boolean; latest_submission: { id: string; status: string } | null };
const businessOf = (r: { body: Record<string, unknown> }) => r.body["business_kyb"] as Profile;

const submit = async (auth: AuthContext, extra: Record<string, unknown> = {}) =>
  businessOf(ok(await h.call(h.svc, "submitBusinessVerification", auth, { body: businessBody(extra) })));
const read = async (auth: AuthContext) => businessOf(ok(await h.call(h.svc, "getBusinessVerification", auth)));

/** What payout eligibility asks: the internal subject, with the payouts service's auth for one org and environment. */
async function askAsPayouts(orgId: string, livemode: boolean): Promise<Profile> {
  const nc = await connect(natsOptions(h.env.natsUrl));
  try {
    const auth: AuthContext = { org_id: orgId, livemode, key_id: "svc_payouts", scopes: null, request_id: `req_${orgId}_${String(livemode)}` };
    const reply = await rpcCall(
      nc,
      internalSubject(h.env.prefix, "kyc", "getBusinessVerification"),
      { auth, params: {}, query: {}, body: {} },
      { timeoutMs: 20_000 },
    );
    return businessOf(ok(reply));
  } finally {
    await nc.close();
  }
}

async function rowsOf(orgId: string): Promise<{ livemode: boolean; status: string; latest_submission_id: string }[]> {
  return h.env.adminSql<{ livemode: boolean; status: string; latest_submission_id: string }[]>`
    select livemode, status, latest_submission_id from kyc.business_verifications where org_id = ${orgId} order by livemode`;
}

async function auditOf(orgId: string): Promise<{ livemode: boolean; action: string; submission_id: string; to_status: string }[]> {
  return h.env.adminSql<{ livemode: boolean; action: string; submission_id: string; to_status: string }[]>`
    select livemode, action, submission_id, to_status from kyc.review_actions where org_id = ${orgId} order by id`;
}

describe("business verification per environment", () => {
  it("a sandbox submission after a live approval leaves the live KYB approved and gets a sandbox record of its own", async () => {
    // Proves the live record, the public live read and the internal read payouts makes are untouched by a test key.
    const orgId = newOrg();
    const live = authFor(orgId, true);
    const sandbox = authFor(orgId, false);
    const liveId = (await submit(live)).latest_submission!.id;
    await reviewSubmission(pgKycStore(h.env.adminSql), { submissionId: liveId, action: "approve", actor: "ops:live" });
    const approved = await read(live);
    expect(approved).toMatchObject({ status: "approved", tax_certified: true, latest_submission: { id: liveId, status: "approved" } });

    const sandboxKyb = await submit(sandbox);
    expect(sandboxKyb).toMatchObject({ status: "under_review", tax_certified: false });
    const sandboxId = sandboxKyb.latest_submission!.id;

    expect(await read(live)).toEqual(approved);
    expect(await askAsPayouts(orgId, true)).toEqual(approved);
    expect(await read(sandbox)).toEqual(sandboxKyb);
    expect(await askAsPayouts(orgId, false)).toEqual(sandboxKyb);
    expect(await rowsOf(orgId)).toEqual([
      { livemode: false, status: "under_review", latest_submission_id: sandboxId },
      { livemode: true, status: "approved", latest_submission_id: liveId },
    ]);
    // The live submission stays approved: only an undecided submission of the same environment is superseded.
    expect((await h.env.adminSql`select status from kyc.submissions where id = ${liveId}`)[0]?.status).toBe("approved");
  });

  it("operators' decisions on a sandbox submission never reach the live record; the audit trail names each environment", async () => {
    // Proves admin review by environment: reject/approve/suspend of sandbox submissions, the queue, show's history.
    const orgId = newOrg();
    const live = authFor(orgId, true);
    const sandbox = authFor(orgId, false);
    const liveId = (await submit(live)).latest_submission!.id;
    await reviewSubmission(pgKycStore(h.env.adminSql), { submissionId: liveId, action: "approve", actor: "ops:live" });
    const s1 = (await submit(sandbox)).latest_submission!.id;

    const queue = await listVerifications(pgKycStore(h.env.adminSql), { status: "under_review", orgId, subject: "business" });
    expect(queue).toEqual([expect.objectContaining({ submission_id: s1, livemode: false })]);
    expect(await listVerifications(pgKycStore(h.env.adminSql), { status: "approved", orgId, livemode: true })).toEqual([
      expect.objectContaining({ submission_id: liveId, livemode: true }),
    ]);

    const rejected = await reviewSubmission(pgKycStore(h.env.adminSql), { submissionId: s1, action: "reject", actor: "ops:sbx", reason: "test data" });
    expect(rejected).toMatchObject({ livemode: false, status: "rejected" });
    const s2 = (await submit(sandbox)).latest_submission!.id;
    await reviewSubmission(pgKycStore(h.env.adminSql), { submissionId: s2, action: "approve", actor: "ops:sbx" });
    await reviewSubmission(pgKycStore(h.env.adminSql), { submissionId: s2, action: "suspend", actor: "ops:sbx", reason: "test suspension" });
    expect((await read(sandbox)).status).toBe("suspended");
    expect(await read(live)).toMatchObject({ status: "approved", latest_submission: { id: liveId } });
    expect((await askAsPayouts(orgId, true)).status).toBe("approved");

    // A suspended sandbox KYB refuses sandbox submissions; the live one still takes live submissions.
    expect(err(await h.call(h.svc, "submitBusinessVerification", sandbox, { body: businessBody() }))).toMatchObject({
      code: "invalid_state_transition",
      extra: { state: "suspended" },
    });

    const shown = await showSubmission(pgKycStore(h.env.adminSql), h.svc.deps.sealer!, { submissionId: liveId, actor: "ops:live", reason: "ticket 7" });
    expect((shown["history"] as { id: string }[]).map((x) => x.id)).toEqual([liveId]);
    expect(await auditOf(orgId)).toEqual([
      { livemode: true, action: "approve", submission_id: liveId, to_status: "approved" },
      { livemode: false, action: "reject", submission_id: s1, to_status: "rejected" },
      { livemode: false, action: "approve", submission_id: s2, to_status: "approved" },
      { livemode: false, action: "suspend", submission_id: s2, to_status: "suspended" },
      { livemode: true, action: "view", submission_id: liveId, to_status: "approved" },
    ]);
    const events = await h.env.adminSql<{ type: string; livemode: boolean }[]>`
      select type, livemode from kyc.outbox where org_id = ${orgId} and type <> 'kyc.submitted' order by seq`;
    expect(events).toEqual([
      { type: "kyc.approved", livemode: true },
      { type: "kyc.rejected", livemode: false },
      { type: "kyc.approved", livemode: false },
      { type: "kyc.suspended", livemode: false },
    ]);
  });

  it("a sandbox approval neither creates nor changes the live KYB, which only a live submission starts", async () => {
    // Proves the live record exists only from a live key's submission, whatever operators decide on sandbox ones.
    const orgId = newOrg();
    const live = authFor(orgId, true);
    const sandbox = authFor(orgId, false);
    const sandboxId = (await submit(sandbox)).latest_submission!.id;
    expect(await read(live)).toMatchObject({ status: "pending", latest_submission: null });
    const decided = await reviewSubmission(pgKycStore(h.env.adminSql), { submissionId: sandboxId, action: "approve", actor: "ops:sbx" });
    expect(decided).toMatchObject({ livemode: false, status: "approved", verifications: [{ livemode: false, event_id: decided.event_id }] });
    expect(await read(sandbox)).toMatchObject({ status: "approved", tax_certified: true, latest_submission: { id: sandboxId } });
    expect(await read(live)).toMatchObject({ status: "pending", tax_certified: false, latest_submission: null });
    expect(await askAsPayouts(orgId, true)).toMatchObject({ status: "pending" });

    const liveId = (await submit(live)).latest_submission!.id;
    expect(await read(live)).toMatchObject({ status: "under_review", latest_submission: { id: liveId } });
    expect(await read(sandbox)).toMatchObject({ status: "approved", latest_submission: { id: sandboxId } });
    await reviewSubmission(pgKycStore(h.env.adminSql), { submissionId: sandboxId, action: "suspend", actor: "ops:sbx", reason: "test suspension" });
    expect((await read(live)).status).toBe("under_review");
    expect((await auditOf(orgId)).map((a) => [a.livemode, a.action])).toEqual([
      [false, "approve"],
      [false, "suspend"],
    ]);
  });

  it("the migration keeps each existing KYB where it counted: a test key's record becomes the live one too", async () => {
    // Proves 0002 on rows written before it: live-key records stay live only, test-key records get a live copy.
    const schema = `kyb_migration_${newOrg()}`;
    const migration = async (file: string) => readFile(join(repoRoot(), "services", "kyc", "migrations", file), "utf8");
    const sql = h.env.adminSql;
    try {
      await sql.unsafe(`create schema "${schema}"`);
      const inSchema = async (text: string) =>
        sql.begin(async (tx) => {
          await tx.unsafe(`set local search_path to "${schema}"`);
          await tx.unsafe(text);
        });
      await inSchema(await migration("0001_kyc.sql"));
      await inSchema(`
        insert into submissions (id, org_id, livemode, subject, status, pii, pii_key_id)
        values ('kycs_a', 'org_a', false, 'business', 'approved', 'sealed', 'k1'),
               ('kycs_b', 'org_b', true, 'business', 'approved', 'sealed', 'k1'),
               ('kycs_c', 'org_c', false, 'business', 'under_review', 'sealed', 'k1');
        insert into business_verifications (org_id, livemode, status, tax_certified, latest_submission_id)
        values ('org_a', false, 'approved', true, 'kycs_a'), ('org_b', true, 'approved', true, 'kycs_b'),
               ('org_c', false, 'under_review', false, 'kycs_c');`);
      await inSchema(await migration("0002_kyb_per_environment.sql"));
      const rows = await sql.unsafe(
        `select org_id, livemode, status, tax_certified, latest_submission_id from "${schema}".business_verifications order by org_id, livemode`,
      );
      expect(rows).toEqual([
        { org_id: "org_a", livemode: false, status: "approved", tax_certified: true, latest_submission_id: "kycs_a" },
        { org_id: "org_a", livemode: true, status: "approved", tax_certified: true, latest_submission_id: "kycs_a" },
        { org_id: "org_b", livemode: true, status: "approved", tax_certified: true, latest_submission_id: "kycs_b" },
        { org_id: "org_c", livemode: false, status: "under_review", tax_certified: false, latest_submission_id: "kycs_c" },
        { org_id: "org_c", livemode: true, status: "under_review", tax_certified: false, latest_submission_id: "kycs_c" },
      ]);
      await expect(
        sql.unsafe(
          `insert into "${schema}".business_verifications (org_id, livemode, status, latest_submission_id) values ('org_b', true, 'pending', 'kycs_b')`,
        ),
      ).rejects.toThrow(/duplicate key/);
    } finally {
      await sql.unsafe(`drop schema "${schema}" cascade`);
    }
  });

  it("a sandbox submission over a migrated record leaves the live copy decidable and decides only it", async () => {
    // Proves supersede spares a submission another environment still rests on, and the decision then reaches live only.
    const orgId = newOrg();
    const sandbox = authFor(orgId, false);
    const live = authFor(orgId, true);
    const first = (await submit(sandbox)).latest_submission!.id;
    // What 0002 makes of a record a test key sent to review before it: the same submission under both environments.
    await h.env.adminSql`
      insert into kyc.business_verifications (org_id, livemode, status, tax_certified, latest_submission_id)
      values (${orgId}, true, 'under_review', false, ${first})`;
    const second = (await submit(sandbox)).latest_submission!.id;
    expect((await h.env.adminSql`select status from kyc.submissions where id = ${first}`)[0]?.status).toBe("under_review");
    const decided = await reviewSubmission(pgKycStore(h.env.adminSql), { submissionId: first, action: "approve", actor: "ops:m" });
    expect(decided.verifications.map((v) => v.livemode)).toEqual([true]);
    expect((await auditOf(orgId)).map((a) => [a.livemode, a.action, a.submission_id])).toEqual([[true, "approve", first]]);
    expect(await read(live)).toMatchObject({ status: "approved", latest_submission: { id: first } });
    expect(await read(sandbox)).toMatchObject({ status: "under_review", latest_submission: { id: second } });
  });
});
