// KYC and KYB through the gateway and the operator CLI: creator intake in sandbox and live, business verification
// unlocking live keys, audited decisions whose events reach the EVENTS stream, scopes, and bad input on every field.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateKeyRingEntry } from "@treasury/service-kit";
import { setupTestEnv, waitFor, type TestEnv } from "@treasury/testing";
import { createApiKey, createOrg } from "../../services/gateway/src/admin.ts";
import { buildKyc, type KycService } from "../../services/kyc/src/service.ts";
import { admin as adminOf } from "./admin-run.ts";
import { call, startStack, type Stack } from "./stack.ts";

let env: TestEnv;
let s: Stack;
let kyc: KycService;
const piiKeys = generateKeyRingEntry("e2e1");

beforeAll(async () => {
  env = await setupTestEnv();
  s = await startStack({ env, services: ["ledger"] });
  // The PII key comes from the test, as `npm start` generates one for the dev stack.
  kyc = await buildKyc(env.env("kyc", { PII_KEYS: piiKeys }));
  await kyc.start();
});
afterAll(async () => {
  await s?.stop();
  await kyc?.stop();
  await env?.cleanup();
});

const admin = (...args: string[]) => adminOf(env, ...args);

const api = (method: string, path: string, key: string, body?: unknown) => call(s.baseUrl, method, path, { key, ...(body !== undefined ? { body } : {}) });

let seq = 0;
async function participant(key: string): Promise<string> {
  const id = `kyc_creator_${Date.now().toString(36)}_${seq++}`;
  expect((await api("POST", "/v1/participants", key, { participant_id: id, display_name: "Creator" })).status).toBe(201);
  return id;
}

function creatorBody(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    legal_name: "Ada Quill Lovelace",
    email: "ada.quill@example.com",
    date_of_birth: "1990-12-10",
    address: { line1: "12 Analytical Row", city: "London", postal_code: "NW1 6XE", country: "GB" },
    document_evidence: [{ type: "government_id", file_id: "file_passport" }],
    tax_id_type: "ssn",
    tax_id_last4: "6789",
    certify_tax_info: true,
    metadata: { crm_id: "c-1" },
    ...extra,
  };
}

function businessBody(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    business_type: "corporation",
    legal_name: "Quill Works Inc",
    primary_contact: { name: "Grace Quill", email: "grace@quill.example" },
    business_address: { line1: "500 Market St", city: "San Francisco", state: "CA", postal_code: "94105", country: "US" },
    document_evidence: [{ type: "articles_of_incorporation", url: "https://files.example/articles.pdf", description: "Delaware filing" }],
    tax_id_type: "ein",
    tax_id_last4: "4321",
    beneficial_owners: [{ name: "Grace Quill", date_of_birth: "1985-03-14", ownership_percent: 100 }],
    ...extra,
  };
}

async function submissionCount(): Promise<number> {
  return Number((await env.adminSql<{ n: string }[]>`select count(*)::text as n from kyc.submissions`)[0]?.n ?? 0);
}

describe("creator KYC", () => {
  it("sandbox: an unverified creator is pending with what is missing; a submission auto-approves and certifies taxes", async () => {
    // Proves GET/POST /v1/kyc/creators/{id} with a test key: the shape of docs/api.md, KYC, 201 on submit, approval and tax_certified.
    const pid = await participant(s.testKey);
    const empty = await api("GET", `/v1/kyc/creators/${pid}`, s.testKey);
    expect(empty.status).toBe(200);
    expect(empty.body).toMatchObject({ success: true, creator_kyc: { participant_id: pid, status: "pending", tax_certified: false, latest_submission: null } });
    expect((empty.body["creator_kyc"] as { missing_fields: string[] }).missing_fields).toContain("document_evidence.government_id");

    const r = await api("POST", `/v1/kyc/creators/${pid}`, s.testKey, creatorBody({ document_evidence: [{ type: "government_id" }] }));
    expect(r.status).toBe(201);
    expect(r.body["request_id"]).toMatch(/^req_/);
    const kycView = r.body["creator_kyc"] as Record<string, unknown>;
    expect(kycView).toMatchObject({
      participant_id: pid,
      status: "approved",
      missing_fields: [],
      tax_certified: true,
      latest_submission: { status: "approved", rejection_reason: null },
    });
    expect((await api("GET", `/v1/kyc/creators/${pid}`, s.testKey)).body["creator_kyc"]).toEqual(kycView);
    // The live environment has its own participants and verifications.
    expect((await api("GET", `/v1/kyc/creators/${pid}`, s.liveKey)).body).toMatchObject({ success: false, error_code: "participant_not_found" });
  });

  it("live: a submission waits for an operator; the CLI lists it, rejects it with a reason, and the decision is evented", { timeout: 120_000 }, async () => {
    // Proves live → under_review, `admin kyc list` and `admin kyc reject` (audited), rejection_reason on GET, kyc.rejected published.
    const pid = await participant(s.liveKey);
    const r = await api("POST", `/v1/kyc/creators/${pid}`, s.liveKey, creatorBody());
    expect(r.status).toBe(201);
    const id = String((r.body["creator_kyc"] as { latest_submission: { id: string } }).latest_submission.id);
    expect(r.body["creator_kyc"]).toMatchObject({ status: "under_review", tax_certified: false });

    const list = await admin("kyc", "list", "--status", "under_review", "--org", s.orgId);
    expect(list.code).toBe(0);
    expect(list.out["verifications"]).toEqual([expect.objectContaining({ submission_id: id, subject: "creator", participant_id: pid, livemode: true })]);
    expect(JSON.stringify(list.out)).not.toContain("Lovelace");

    const rejected = await admin("kyc", "reject", "--id", id, "--reason", "document expired", "--actor", "ops:carol");
    expect(rejected.code).toBe(0);
    expect(rejected.out).toMatchObject({
      submission_id: id,
      action: "reject",
      previous_status: "under_review",
      status: "rejected",
      actor: "ops:carol",
      reason: "document expired",
    });
    expect((await api("GET", `/v1/kyc/creators/${pid}`, s.liveKey)).body["creator_kyc"]).toMatchObject({
      status: "rejected",
      latest_submission: { id, rejection_reason: "document expired" },
    });
    const [audit] = await env.adminSql`select actor, reason, action, created_at from kyc.review_actions where submission_id = ${id}`;
    expect(audit).toMatchObject({ actor: "ops:carol", reason: "document expired", action: "reject" });
    // The CLI wrote the outbox row; the kyc service's relay publishes it.
    await waitFor(
      async () => (await env.adminSql`select 1 from kyc.outbox where id = ${String(rejected.out["event_id"])} and published_at is not null`).length === 1,
      { timeoutMs: 15_000 },
    );

    // Reviewing the person behind it needs a stated reason; the kyc service opens the data and records the access.
    const shown = await admin("kyc", "show", "--id", id, "--reason", "appeal 7", "--actor", "ops:carol");
    expect(shown.code).toBe(0);
    expect(shown.out["submission"]).toMatchObject({ id, status: "rejected", personal_data: { legal_name: "Ada Quill Lovelace", date_of_birth: "1990-12-10" } });
    expect((await env.adminSql`select actor, reason from kyc.review_actions where submission_id = ${id} and action = 'view'`)[0]).toEqual({
      actor: "ops:carol",
      reason: "appeal 7",
    });
    const unexplained = await admin("kyc", "show", "--id", id, "--actor", "ops:carol");
    expect(unexplained.err).toMatchObject({ error_code: "validation_error" });
    expect(String(unexplained.err["error"])).toContain("reason");

    const again = await api("POST", `/v1/kyc/creators/${pid}`, s.liveKey, creatorBody());
    const id2 = String((again.body["creator_kyc"] as { latest_submission: { id: string } }).latest_submission.id);
    expect((await admin("kyc", "approve", "--id", id2)).out).toMatchObject({
      status: "approved",
      tax_certified: true,
      actor: expect.stringMatching(/^operator:/),
    });
    expect((await api("GET", `/v1/kyc/creators/${pid}`, s.liveKey)).body["creator_kyc"]).toMatchObject({ status: "approved", tax_certified: true });
  });
});

describe("business KYB", () => {
  it("is submitted with a test key, never auto-approves, and its approval unlocks live keys", { timeout: 120_000 }, async () => {
    // Proves the live-key gate: `admin key create --env live` refuses (kyb_not_approved) until `admin kyc approve`.
    const { org_id } = await createOrg(env.adminSql, { name: "KYB Co" });
    const testKey = (await createApiKey(env.adminSql, { orgId: org_id, environment: "sandbox", scopes: null })).api_key;
    expect((await api("GET", "/v1/kyc/business", testKey)).body).toMatchObject({ success: true, business_kyb: { status: "pending", latest_submission: null } });

    const r = await api("POST", "/v1/kyc/business", testKey, businessBody());
    expect(r.status).toBe(201);
    const id = String((r.body["business_kyb"] as { latest_submission: { id: string } }).latest_submission.id);
    expect(r.body["business_kyb"]).toMatchObject({ status: "under_review", missing_fields: [], tax_certified: false });

    const refused = await admin("key", "create", "--org", org_id, "--env", "live");
    expect(refused.code).not.toBe(0);
    expect(refused.err).toMatchObject({ error_code: "kyb_not_approved" });

    expect((await admin("kyc", "list", "--status", "under_review", "--org", org_id, "--subject", "business")).out["verifications"]).toEqual([
      expect.objectContaining({
        submission_id: id,
        subject: "business",
        business_type: "corporation",
        document_types: ["articles_of_incorporation"],
        tax_id_last4: "4321",
      }),
    ]);
    expect((await admin("kyc", "approve", "--id", id, "--actor", "ops:dave", "--reason", "EIN letter checked")).out).toMatchObject({
      status: "approved",
      tax_certified: true,
    });

    const live = await admin("key", "create", "--org", org_id, "--env", "live");
    expect(live.code).toBe(0);
    const liveKey = String(live.out["api_key"]);
    expect(liveKey).toMatch(/^slk_live_/);
    // The sandbox KYB unlocked the key; the live KYB, which live payouts read, starts with the live key's submission.
    expect((await api("GET", "/v1/kyc/business", liveKey)).body["business_kyb"]).toMatchObject({ status: "pending", latest_submission: null });
    const liveKyb = await api("POST", "/v1/kyc/business", liveKey, businessBody());
    expect(liveKyb.body["business_kyb"]).toMatchObject({ status: "under_review" });
    expect((await api("GET", "/v1/kyc/business", testKey)).body["business_kyb"]).toMatchObject({
      status: "approved",
      tax_certified: true,
      latest_submission: { id },
    });
    // While the live KYB is under review the approved sandbox one still unlocks keys; a rejected live KYB stops them.
    expect((await admin("key", "create", "--org", org_id, "--env", "live")).code).toBe(0);
    const liveId = String((liveKyb.body["business_kyb"] as { latest_submission: { id: string } }).latest_submission.id);
    expect((await admin("kyc", "reject", "--id", liveId, "--reason", "owner not found")).out).toMatchObject({ status: "rejected" });
    expect((await admin("key", "create", "--org", org_id, "--env", "live")).err).toMatchObject({ error_code: "kyb_not_approved" });

    // A suspended KYB no longer unlocks live keys (the keys already issued stay the operator's call).
    expect((await admin("kyc", "suspend", "--id", id, "--reason", "registry mismatch")).out).toMatchObject({ status: "suspended" });
    expect((await admin("key", "create", "--org", org_id, "--env", "live")).err).toMatchObject({ error_code: "kyb_not_approved" });
    expect((await api("POST", "/v1/kyc/business", testKey, businessBody())).body).toMatchObject({ success: false, error_code: "invalid_state_transition" });
  });

  it(
    "the spec's required fields alone are accepted: a sandbox creator approves, a business waits and cannot be approved until complete",
    { timeout: 60_000 },
    async () => {
      // Proves wire-decisions §7's KYC rule with the bodies the official SDK sends.
      const { org_id } = await createOrg(env.adminSql, { name: "Spec Fields Co" });
      const key = (await createApiKey(env.adminSql, { orgId: org_id, environment: "sandbox", scopes: null })).api_key;
      const pid = await participant(key);
      const bare = {
        legal_name: "Ada Quill Lovelace",
        email: "ada.quill@example.com",
        date_of_birth: "1990-12-10",
        address: { line1: "12 Analytical Row", city: "London", postal_code: "NW1 6XE", country: "GB" },
        document_evidence: [{ type: "government_id" }],
        certify_tax_info: true,
      };
      const creator = await api("POST", `/v1/kyc/creators/${pid}`, key, bare);
      expect(creator.status, JSON.stringify(creator.body)).toBe(201);
      expect(creator.body["creator_kyc"]).toMatchObject({ status: "approved", missing_fields: ["tax_id_type", "tax_id_last4"] });

      const kyb = await api("POST", "/v1/kyc/business", key, {
        business_type: "llc",
        legal_name: "Spec Fields LLC",
        primary_contact: { name: "Grace Quill", email: "grace@quill.example" },
        business_address: { line1: "500 Market St", city: "San Francisco", postal_code: "94105", country: "US" },
        document_evidence: [{ type: "articles_of_incorporation" }],
      });
      expect(kyb.status, JSON.stringify(kyb.body)).toBe(201);
      expect(kyb.body["business_kyb"]).toMatchObject({ status: "under_review", missing_fields: ["tax_id_type", "tax_id_last4", "beneficial_owners"] });
      const id = String((kyb.body["business_kyb"] as { latest_submission: { id: string } }).latest_submission.id);
      const approve = await admin("kyc", "approve", "--id", id, "--actor", "ops:dave");
      expect(approve).toMatchObject({
        code: 1,
        err: { error_code: "invalid_state_transition", error: expect.stringContaining("tax_id_type, tax_id_last4, beneficial_owners missing") },
      });
      expect((await admin("key", "create", "--org", org_id, "--env", "live")).err).toMatchObject({ error_code: "kyb_not_approved" });
    },
  );

  it("a draft lists what is missing and is not in the review queue", { timeout: 60_000 }, async () => {
    // Proves submit_for_review: false on the business route.
    const { org_id } = await createOrg(env.adminSql, { name: "Draft Co" });
    const key = (await createApiKey(env.adminSql, { orgId: org_id, environment: "sandbox", scopes: null })).api_key;
    const r = await api(
      "POST",
      "/v1/kyc/business",
      key,
      businessBody({ submit_for_review: false, beneficial_owners: [], business_address: { line1: "1 Main" } }),
    );
    expect(r.status).toBe(201);
    expect(r.body["business_kyb"]).toMatchObject({
      status: "pending",
      missing_fields: ["business_address.city", "business_address.postal_code", "business_address.country", "beneficial_owners"],
      latest_submission: { status: "pending", submitted_at: null },
    });
    expect((await admin("kyc", "list", "--status", "under_review", "--org", org_id)).out).toEqual({ verifications: [] });
    expect((await admin("kyc", "list", "--status", "pending", "--org", org_id)).out["verifications"]).toHaveLength(1);
  });
});

describe("access and bad input", () => {
  it("needs the creators scope to submit; read is enough to look", async () => {
    // Proves the route table's scopes for the KYC routes, enforced before the service runs.
    const readOnly = (await s.key({ scopes: ["read"] })).api_key;
    const before = await submissionCount();
    expect((await api("POST", "/v1/kyc/business", readOnly, businessBody())).body).toMatchObject({ success: false, error_code: "insufficient_scope" });
    expect((await api("GET", "/v1/kyc/business", readOnly)).status).toBe(200);
    expect(await submissionCount()).toBe(before);
  });

  it("bad input on every field answers 400 validation_error naming the field, and stores nothing", async () => {
    // Proves the envelope, the precise code and details path for each field of both bodies, and no row written.
    const pid = await participant(s.testKey);
    const livePid = await participant(s.liveKey);
    const before = await submissionCount();
    const creatorCases: [Record<string, unknown>, string][] = [
      [{ legal_name: undefined }, "legal_name"],
      [{ legal_name: 42 }, "legal_name"],
      [{ email: "ada(at)example" }, "email"],
      [{ date_of_birth: "1990-02-30" }, "date_of_birth"],
      [{ date_of_birth: "12/10/1990" }, "date_of_birth"],
      [{ address: "12 Analytical Row" }, "address"],
      [{ address: { line1: "1", city: "L", postal_code: "1", country: "Britain" } }, "address.country"],
      [{ document_evidence: undefined }, "document_evidence"],
      [{ document_evidence: [{ type: "selfie" }] }, "document_evidence.0.type"],
      [{ document_evidence: [{ type: "government_id", url: "javascript:alert(1)" }] }, "document_evidence.0.url"],
      [{ display_name: ["x"] }, "display_name"],
      [{ tax_id_type: "tin" }, "tax_id_type"],
      [{ tax_id_last4: "12a4" }, "tax_id_last4"],
      [{ business_type: "nonprofit" }, "business_type"],
      [{ certify_tax_info: "true" }, "certify_tax_info"],
      [{ submit_for_review: 1 }, "submit_for_review"],
      [{ metadata: "x" }, "metadata"],
      [{ metadata: { note: "SSN 123-45-6789" } }, "metadata.note"],
      [{ legal_name: "Ada 123456789" }, "legal_name"],
    ];
    for (const [patch, path] of creatorCases) {
      const r = await api("POST", `/v1/kyc/creators/${pid}`, s.testKey, creatorBody(patch));
      expect(r.status, path).toBe(400);
      expect(r.body, path).toMatchObject({ success: false, error_code: "validation_error" });
      expect(
        (r.body["details"] as { path: string }[]).map((d) => d.path),
        path,
      ).toContain(path);
      expect(JSON.stringify(r.body)).not.toContain("123-45-6789");
    }
    const liveDoc = await api("POST", `/v1/kyc/creators/${livePid}`, s.liveKey, creatorBody({ document_evidence: [{ type: "government_id" }] }));
    expect(liveDoc.body).toMatchObject({ error_code: "validation_error", details: [{ path: "document_evidence.0" }] });

    const businessCases: [Record<string, unknown>, string][] = [
      [{ business_type: "cooperative" }, "business_type"],
      [{ legal_name: "" }, "legal_name"],
      [{ primary_contact: undefined }, "primary_contact"],
      [{ primary_contact: { name: "G", email: "grace" } }, "primary_contact.email"],
      [{ business_address: { line1: "1", city: "SF", postal_code: "9", country: 1 } }, "business_address.country"],
      [{ document_evidence: [{ type: "bank_statement" }] }, "document_evidence.0.type"],
      [{ tax_id_type: "ssn4" }, "tax_id_type"],
      [{ tax_id_last4: "98-7654321" }, "tax_id_last4"],
      [{ beneficial_owners: {} }, "beneficial_owners"],
      [{ beneficial_owners: [{ name: "G", date_of_birth: "1985-02-29" }] }, "beneficial_owners.0.date_of_birth"],
      [{ submit_for_review: "no" }, "submit_for_review"],
      [{ metadata: { ein: "987654321" } }, "metadata.ein"],
    ];
    const bizKey = (await s.key({})).api_key;
    for (const [patch, path] of businessCases) {
      const r = await api("POST", "/v1/kyc/business", bizKey, businessBody(patch));
      expect(r.status, path).toBe(400);
      expect(r.body, path).toMatchObject({ success: false, error_code: "validation_error" });
      expect(
        (r.body["details"] as { path: string }[]).map((d) => d.path),
        path,
      ).toContain(path);
    }
    expect(await submissionCount()).toBe(before);
    expect((await api("POST", "/v1/kyc/creators/nobody_here", s.testKey, creatorBody())).body).toMatchObject({
      success: false,
      error_code: "participant_not_found",
    });
    expect((await api("GET", "/v1/kyc/creators/nobody_here", s.testKey)).status).toBe(404);
    expect(await submissionCount()).toBe(before);
  });

  it("the CLI refuses bad review commands with a message and a non-zero exit", { timeout: 120_000 }, async () => {
    // Proves operator input errors: unknown submission, missing reason, bad status, missing id, illegal move.
    const missing = await admin("kyc", "approve", "--id", "kycs_doesnotexist");
    expect(missing).toMatchObject({ code: 1, err: { error_code: "kyc_not_found" } });
    expect((await admin("kyc", "approve")).err["error"]).toContain("--id");
    expect((await admin("kyc", "list", "--status", "lost")).err["error"]).toContain("--status");
    expect((await admin("kyc", "list", "--status", "pending", "--limit", "0")).err).toMatchObject({ error_code: "validation_error" });
    const pid = await participant(s.testKey);
    const approved = await api("POST", `/v1/kyc/creators/${pid}`, s.testKey, creatorBody());
    const id = String((approved.body["creator_kyc"] as { latest_submission: { id: string } }).latest_submission.id);
    expect((await admin("kyc", "reject", "--id", id)).err).toMatchObject({ error_code: "validation_error" });
    expect((await admin("kyc", "approve", "--id", id)).err).toMatchObject({ error_code: "invalid_state_transition" });
  });
});
