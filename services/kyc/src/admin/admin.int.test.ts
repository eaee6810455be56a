// Proves the kyc operator commands over real NATS and PostgreSQL, sent as the admin CLI sends them: the review
// queue, a decision (kept in kyc.review_actions, which `audit list` answers), a refused attempt (kept in
// kyc.audit_log), opening personal data with the service's own key ring (the view recorded), and `admin find`'s
// kyc rows by submission, request, org and participant.
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_FANOUT_OPERATIONS, adminOperation, rpcSubject, type AuditEntry, type FindHit, type FindRowsReply, type RpcReply } from "@treasury/contracts";
import { rpcCall } from "@treasury/service-kit";
import { authFor, businessBody, creatorBody, err, newOrg, ok, startKyc, type KycHarness } from "../test-support.ts";

const RPC_TIMEOUT_TEST_MS = 20_000;

let h: KycHarness;
let nc: NatsConnection;

beforeAll(async () => {
  h = await startKyc();
  nc = await h.env.nats();
});
afterAll(async () => {
  await h?.close();
});

function kycCall(operation: string, payload: unknown): Promise<RpcReply> {
  return rpcCall(nc, rpcSubject(h.env.prefix, "kyc", operation), payload, { timeoutMs: RPC_TIMEOUT_TEST_MS });
}

/** One command as the CLI sends it. */
function admin(command: string, request: { flags?: Record<string, string | boolean>; reason?: string } = {}): Promise<RpcReply> {
  return kycCall(adminOperation(command), { actor: "ops:alice", flags: {}, ...request });
}

async function auditList(filter: Record<string, unknown>): Promise<AuditEntry[]> {
  return ok(await kycCall(ADMIN_FANOUT_OPERATIONS.auditList, { limit: 50, ...filter })).body["entries"] as AuditEntry[];
}

async function findRows(nodes: unknown[], seed = false): Promise<FindRowsReply> {
  return ok(await kycCall(ADMIN_FANOUT_OPERATIONS.findRows, { nodes, seed })).body as unknown as FindRowsReply;
}

/** A business submission of a new sandbox org, waiting for review (business KYB never auto-approves). */
async function businessUnderReview(): Promise<{ orgId: string; id: string; requestId: string }> {
  const auth = authFor(newOrg());
  const reply = ok(await h.call(h.svc, "submitBusinessVerification", auth, { body: businessBody() }));
  const kyb = reply.body["business_kyb"] as { status: string; latest_submission: { id: string } };
  expect(kyb.status).toBe("under_review");
  return { orgId: auth.org_id, id: kyb.latest_submission.id, requestId: auth.request_id };
}

async function auditLogOf(orgId: string | null): Promise<Record<string, unknown>[]> {
  return h.env.adminSql`
    select actor, action, org_id, livemode, target_ids, reason, outcome, error_code, error from kyc.audit_log
     where org_id is not distinct from ${orgId} order by id`;
}

describe("kyc list, approve and audit list", () => {
  it("lists the queue, decides, and answers the decision from kyc.review_actions, not kyc.audit_log", async () => {
    const { orgId, id } = await businessUnderReview();
    const queue = ok(await admin("kyc list", { flags: { status: "under_review", org: orgId } })).body["verifications"];
    expect(queue).toEqual([expect.objectContaining({ submission_id: id, subject: "business", org_id: orgId, livemode: false, status: "under_review" })]);
    expect(JSON.stringify(queue)).not.toContain("Quill Works");

    const decided = ok(await admin("kyc approve", { flags: { id }, reason: "documents match" })).body;
    expect(decided).toMatchObject({ submission_id: id, action: "approve", previous_status: "under_review", status: "approved", actor: "ops:alice" });
    expect(await auditLogOf(orgId)).toEqual([]);
    expect(await auditList({ org_id: orgId, action: "kyc" })).toEqual([
      {
        source: "kyc.review_actions",
        id: decided["review_action_id"],
        at: expect.any(String),
        actor: "ops:alice",
        action: "kyc.approve",
        org_id: orgId,
        livemode: false,
        target_ids: [id, decided["event_id"]],
        reason: "documents match",
        outcome: "succeeded",
        error_code: null,
        error: null,
        details: { subject: "business", from_status: "under_review", to_status: "approved" },
      },
    ]);
    expect(await auditList({ org_id: orgId, action: "kyc.reject" })).toEqual([]);
    expect(await auditList({ org_id: orgId, action: "key" })).toEqual([]);
  });

  it("refuses a bad filter of the queue with the flag's message", async () => {
    expect(err(await admin("kyc list", { flags: { status: "open" } }))).toMatchObject({
      code: "validation_error",
      message: "--status must be one of pending, under_review, approved, rejected, suspended",
    });
    expect(err(await admin("kyc list", { flags: { status: "pending", subject: "person" } })).message).toBe("--subject must be business or creator");
    expect(err(await admin("kyc list", { flags: { status: "pending", limit: "0" } })).message).toBe("limit: must be an integer from 1 to 500");
  });
});

describe("refused decisions", () => {
  it("are recorded in kyc.audit_log with the submission's org, environment and id, and listed with the decisions", async () => {
    const { orgId, id } = await businessUnderReview();
    expect(err(await admin("kyc reject", { flags: { id } }))).toMatchObject({ code: "validation_error", message: "reason: is required to reject" });
    expect(await auditLogOf(orgId)).toEqual([
      {
        actor: "ops:alice",
        action: "kyc.reject",
        org_id: orgId,
        livemode: false,
        target_ids: [id],
        reason: null,
        outcome: "failed",
        error_code: "validation_error",
        error: "reason: is required to reject",
      },
    ]);
    ok(await admin("kyc suspend", { flags: { id }, reason: "sanctions hit" }));
    const listed = await auditList({ targets: [id] });
    expect(listed.map((e) => [e.source, e.action, e.outcome])).toEqual([
      ["kyc.review_actions", "kyc.suspend", "succeeded"],
      ["kyc.audit_log", "kyc.reject", "failed"],
    ]);
  });

  it("records an attempt without --id or on an unknown submission without an org", async () => {
    expect(err(await admin("kyc approve"))).toMatchObject({ code: "validation_error", message: "missing --id" });
    expect(err(await admin("kyc approve", { flags: { id: "kycs_000000000000000000000000" } })).code).toBe("kyc_not_found");
    const rows = (await auditLogOf(null)).filter((r) => r["action"] === "kyc.approve");
    expect(rows.map((r) => [r["target_ids"], r["error_code"]])).toEqual([
      [[], "validation_error"],
      [["kycs_000000000000000000000000"], "kyc_not_found"],
    ]);
  });
});

describe("kyc show", () => {
  it("opens the personal data with the service's key ring after recording the view, and needs a reason", async () => {
    const { orgId, id } = await businessUnderReview();
    expect(err(await admin("kyc show", { flags: { id } }))).toMatchObject({ code: "validation_error", message: "reason: is required to open personal data" });
    const shown = ok(await admin("kyc show", { flags: { id }, reason: "ticket 42" })).body as {
      submission: { id: string; personal_data: Record<string, unknown> };
      review_actions: { action: string; actor: string }[];
    };
    expect(shown.submission).toMatchObject({ id, personal_data: { legal_name: "Quill Works LLC" } });
    expect(shown.review_actions).toEqual([expect.objectContaining({ action: "view", actor: "ops:alice" })]);
    const views = await auditList({ org_id: orgId, action: "kyc.view" });
    // The view and the refused attempt before it, under one action name.
    expect(views).toEqual([
      expect.objectContaining({ source: "kyc.review_actions", reason: "ticket 42", target_ids: [id] }),
      expect.objectContaining({ source: "kyc.audit_log", outcome: "failed", error_code: "validation_error" }),
    ]);
    expect((await auditLogOf(orgId)).map((r) => [r["action"], r["outcome"]])).toEqual([["kyc.view", "failed"]]);
  });
});

describe("admin.find.rows", () => {
  const tables = (hits: FindHit[]) => hits.map((hit) => [hit.table, hit.follow]);

  it("answers a submission with its review trail, without personal data, and hands back its scope", async () => {
    const { orgId, id } = await businessUnderReview();
    ok(await admin("kyc approve", { flags: { id } }));
    const found = await findRows([{ kind: "kyc_submission", id }]);
    expect(tables(found.hits)).toEqual([
      ["kyc.submissions", true],
      ["kyc.review_actions", true],
    ]);
    expect(found.hits[0]?.row).toMatchObject({ id, org_id: orgId, status: "approved" });
    expect(found.hits[0]?.row).not.toHaveProperty("pii");
    expect(found.hits[1]?.row).toMatchObject({ submission_id: id, action: "approve", id: expect.any(Number) });
    expect(found.nodes).toEqual([{ kind: "kyc_submission", id, scope: { orgId, livemode: false } }]);
    expect((await findRows([{ kind: "kyc_submission", id, scope: { orgId, livemode: false } }])).nodes).toEqual([]);
  });

  it("answers a request with its submission, an org asked for itself with its business verification", async () => {
    const { orgId, id, requestId } = await businessUnderReview();
    const byRequest = await findRows([{ kind: "request", id: requestId }]);
    expect(byRequest.hits.map((hit) => [hit.table, hit.follow, hit.row["id"]])).toEqual([["kyc.submissions", true, id]]);
    expect(byRequest.hits[0]?.row).not.toHaveProperty("pii");
    const org = await findRows([{ kind: "org", id: orgId }], true);
    expect(org.hits).toEqual([
      { table: "kyc.business_verifications", follow: false, row: expect.objectContaining({ org_id: orgId, latest_submission_id: id }) },
    ]);
    expect(await findRows([{ kind: "org", id: orgId }], false)).toEqual({ hits: [], nodes: [] });
  });

  it("answers a participant's lists with its creator verification, only within its org and environment", async () => {
    const auth = authFor(newOrg());
    h.addParticipant(auth, "creator_find");
    ok(await h.call(h.svc, "submitCreatorVerification", auth, { params: { participant_id: "creator_find" }, body: creatorBody() }));
    const node = { kind: "participant_lists", id: "creator_find" };
    const found = await findRows([{ ...node, scope: { orgId: auth.org_id, livemode: false } }], true);
    expect(found.hits).toEqual([
      { table: "kyc.creator_verifications", follow: false, row: expect.objectContaining({ participant_id: "creator_find", status: "approved" }) },
    ]);
    expect(await findRows([node], true)).toEqual({ hits: [], nodes: [] });
    expect(await findRows([{ ...node, scope: { orgId: auth.org_id, livemode: true } }], true)).toEqual({ hits: [], nodes: [] });
  });
});
