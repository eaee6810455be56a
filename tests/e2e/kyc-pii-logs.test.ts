// Proves personal data never reaches a log: gateway, ledger and kyc run as real processes at the most verbose log
// level, KYC and KYB submissions (accepted, refused and decided) go through the gateway, and every line each
// process printed is searched for every personal value sent.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApiKey, createOrg } from "../../services/gateway/src/admin.ts";
import { pgKycStore } from "../../services/kyc/src/store/verifications.ts";
import { reviewSubmission } from "../../services/kyc/src/usecases/review.ts";
import { call } from "./stack.ts";
import { startTracedStack, type TracedStack } from "./traced-stack.ts";

let stack: TracedStack;
let baseUrl = "";
let testKey = "";
let liveKey = "";

/** Distinctive values: each would be found if any process printed it. */
const PII = {
  legal_name: "Zenobia Quartermaine-Oyelaran",
  email: "zenobia.q.oyelaran@example.org",
  date_of_birth: "1987-07-19",
  line1: "4471 Wisteria Crescent",
  postal_code: "QX7 9ZZ",
  phone: "+1 (628) 555-0199",
  business_name: "Quartermaine Oyelaran Holdings LLC",
  owner: "Ifeoluwa Quartermaine",
  owner_dob: "1979-11-03",
  description: "passport number K7741203",
};

beforeAll(async () => {
  stack = await startTracedStack("kyc");
  baseUrl = stack.baseUrl;
  const { org_id } = await createOrg(stack.env.adminSql, { name: "Log Check" });
  testKey = (await createApiKey(stack.env.adminSql, { orgId: org_id, environment: "sandbox", scopes: null })).api_key;
  liveKey = (await createApiKey(stack.env.adminSql, { orgId: org_id, environment: "live", scopes: null, forceUnverified: true })).api_key;
}, 120_000);
afterAll(async () => {
  await stack?.close();
});

function creatorBody(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    legal_name: PII.legal_name,
    email: PII.email,
    date_of_birth: PII.date_of_birth,
    address: { line1: PII.line1, city: "Lagos", postal_code: PII.postal_code, country: "NG" },
    document_evidence: [{ type: "government_id", file_id: "file_1", description: PII.description }],
    tax_id_type: "ssn",
    tax_id_last4: "1234",
    certify_tax_info: true,
    ...extra,
  };
}

describe("PII in logs", () => {
  it("no process logs any personal value, whatever happens to the request", { timeout: 120_000 }, async () => {
    // Proves the log hygiene of the whole path at LOG_LEVEL=trace: success, validation failures, a refused state move, decisions.
    const api = (method: string, path: string, key: string, body?: unknown) => call(baseUrl, method, path, { key, ...(body !== undefined ? { body } : {}) });
    for (const [key, pid] of [
      [testKey, "pii_creator_test"],
      [liveKey, "pii_creator_live"],
    ] as const) {
      expect((await api("POST", "/v1/participants", key, { participant_id: pid })).status).toBe(201);
    }
    expect((await api("POST", "/v1/kyc/creators/pii_creator_test", testKey, creatorBody())).status).toBe(201);
    const live = await api("POST", "/v1/kyc/creators/pii_creator_live", liveKey, creatorBody());
    expect(live.status).toBe(201);
    // Refused requests carrying personal data: a bad field, a bad address, an unknown participant, a draft over an approval.
    expect((await api("POST", "/v1/kyc/creators/pii_creator_test", testKey, creatorBody({ email: `${PII.legal_name} at home` }))).status).toBe(400);
    expect((await api("POST", "/v1/kyc/creators/pii_creator_test", testKey, creatorBody({ address: { line1: PII.line1, country: "Britain" } }))).status).toBe(
      400,
    );
    expect((await api("POST", "/v1/kyc/creators/nobody", testKey, creatorBody())).status).toBe(404);
    expect((await api("POST", "/v1/kyc/creators/pii_creator_test", testKey, creatorBody({ submit_for_review: false }))).status).toBe(409);
    const kyb = await api("POST", "/v1/kyc/business", testKey, {
      business_type: "llc",
      legal_name: PII.business_name,
      primary_contact: { name: PII.legal_name, email: PII.email, phone: PII.phone },
      business_address: { line1: PII.line1, city: "Lagos", postal_code: PII.postal_code, country: "NG" },
      document_evidence: [{ type: "articles_of_incorporation", url: "https://files.example/a.pdf" }],
      tax_id_type: "ein",
      tax_id_last4: "9876",
      beneficial_owners: [{ name: PII.owner, date_of_birth: PII.owner_dob, phone: PII.phone }],
    });
    expect(kyb.status).toBe(201);
    const kybId = String((kyb.body["business_kyb"] as { latest_submission: { id: string } }).latest_submission.id);
    await reviewSubmission(pgKycStore(stack.env.adminSql), { submissionId: kybId, action: "approve", actor: "ops:logcheck" });
    const liveId = String((live.body["creator_kyc"] as { latest_submission: { id: string } }).latest_submission.id);
    await reviewSubmission(pgKycStore(stack.env.adminSql), { submissionId: liveId, action: "reject", actor: "ops:logcheck", reason: "document unreadable" });
    expect((await api("GET", "/v1/kyc/business", testKey)).body["business_kyb"]).toMatchObject({ status: "approved" });

    // Let the processes flush: stop them, then read everything each printed.
    const lines = await stack.stopAndReadLogs();
    // The logs are really verbose (trace): the requests themselves are in them (by route pattern: the gateway
    // never logs a path's ids), so a silent logger cannot pass.
    expect(lines.some((l) => l.includes("/v1/kyc/creators/:participant_id"))).toBe(true);
    for (const [field, value] of Object.entries(PII)) {
      const hits = lines.filter((l) => l.toLowerCase().includes(value.toLowerCase()));
      expect(hits, `${field} appears in the logs`).toEqual([]);
    }
  });
});
