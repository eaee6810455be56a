// Proves operators' decisions over in-memory ports: each writes the submission's and the verification's status,
// one audit row and one event together; a refusal needs a reason; illegal moves, replaced submissions and unknown
// ids change nothing; a suspension is lifted by an approval.
import { describe, expect, it } from "vitest";
import type { Tenant } from "@treasury/contracts";
import { listVerifications, reviewSubmission } from "../src/usecases/review.ts";
import { submitBusiness } from "../src/usecases/submit.ts";
import { business } from "./bodies.ts";
import { fakes } from "./fakes.ts";

const live: Tenant = { orgId: "org_unit", livemode: true };
const submitter = { requestId: "req_1", keyId: "key_1" };
const DECIDED_AT = new Date("2026-04-01T00:00:00.000Z");

async function underReview() {
  const f = fakes();
  await submitBusiness(f.deps, live, submitter, business());
  const id = f.store.state.submissions[0]!.id;
  return { ...f, id, kyb: { subject: "business" as const, orgId: live.orgId, livemode: true } };
}

describe("reviewSubmission", () => {
  it("approve: the submission, the verification, one audit row and one event, together", async () => {
    const { store, id, kyb } = await underReview();
    const events = store.state.events.length;
    const r = await reviewSubmission(store, { submissionId: id, action: "approve", actor: " ops:alice ", reason: "documents match", now: DECIDED_AT });
    expect(r).toMatchObject({
      submission_id: id,
      previous_status: "under_review",
      status: "approved",
      tax_certified: true,
      actor: "ops:alice",
      reason: "documents match",
      reviewed_at: DECIDED_AT.toISOString(),
      verifications: [{ livemode: true, review_action_id: r.review_action_id, event_id: r.event_id }],
    });
    expect(store.statusOf(kyb)).toBe("approved");
    expect(store.state.submissions[0]).toMatchObject({ status: "approved", reviewed_at: DECIDED_AT, rejection_reason: null });
    expect(store.state.reviewActions).toEqual([
      expect.objectContaining({ id: r.review_action_id, action: "approve", from_status: "under_review", to_status: "approved", event_id: r.event_id }),
    ]);
    expect(store.state.events.slice(events)).toEqual([
      expect.objectContaining({ id: r.event_id, type: "kyc.approved", livemode: true, data: expect.objectContaining({ actor: "ops:alice" }) }),
    ]);
    expect(await listVerifications(store, { status: "approved" })).toEqual([expect.objectContaining({ submission_id: id, status: "approved" })]);
  });

  it("a refusal needs a reason; illegal moves and unknown ids change nothing", async () => {
    const { store, id } = await underReview();
    const before = structuredClone(store.state);
    await expect(reviewSubmission(store, { submissionId: id, action: "reject", actor: "ops:c" })).rejects.toMatchObject({
      code: "validation_error",
      details: [{ path: "reason" }],
    });
    await expect(reviewSubmission(store, { submissionId: id, action: "approve", actor: " " })).rejects.toMatchObject({ code: "validation_error" });
    await expect(reviewSubmission(store, { submissionId: "kycs_missing", action: "approve", actor: "ops:c" })).rejects.toMatchObject({
      code: "kyc_not_found",
    });
    expect(store.state).toEqual(before);

    const rejected = await reviewSubmission(store, { submissionId: id, action: "reject", actor: "ops:c", reason: "blurry document" });
    expect(rejected).toMatchObject({ status: "rejected", tax_certified: false });
    expect(store.state.submissions[0]!.rejection_reason).toBe("blurry document");
    const after = structuredClone(store.state);
    await expect(reviewSubmission(store, { submissionId: id, action: "approve", actor: "ops:c" })).rejects.toMatchObject({
      code: "invalid_state_transition",
    });
    expect(store.state).toEqual(after);
  });

  it("a replaced submission cannot be decided; a suspension is lifted by an approval", async () => {
    const { deps, store, id, kyb } = await underReview();
    await submitBusiness(deps, live, submitter, business({ legal_name: "Quill Works Two LLC" }));
    const latest = store.state.submissions[1]!.id;
    await expect(reviewSubmission(store, { submissionId: id, action: "approve", actor: "ops:d" })).rejects.toMatchObject({
      code: "invalid_state_transition",
      extra: { latest_submission_id: latest },
    });
    await reviewSubmission(store, { submissionId: latest, action: "approve", actor: "ops:d" });
    expect((await reviewSubmission(store, { submissionId: latest, action: "suspend", actor: "ops:d", reason: "chargebacks" })).status).toBe("suspended");
    expect(store.statusOf(kyb)).toBe("suspended");
    expect((await reviewSubmission(store, { submissionId: latest, action: "approve", actor: "ops:d", reason: "resolved" })).status).toBe("approved");
    expect(store.state.reviewActions.map((a) => `${a.from_status}->${a.to_status}`)).toEqual([
      "under_review->approved",
      "approved->suspended",
      "suspended->approved",
    ]);
    expect(store.state.events.map((e) => e.type)).toEqual(["kyc.submitted", "kyc.submitted", "kyc.approved", "kyc.suspended", "kyc.approved"]);
  });
});
