// Proves submissions over in-memory ports: a sandbox creator is approved at once and the approval is recorded as
// the system's; a live creator and any business wait for review; a draft keeps what is missing; personal data is
// sealed to its row; refusals (unknown participant, no PII keys, incomplete) store nothing.
import { describe, expect, it } from "vitest";
import type { Tenant } from "@treasury/contracts";
import { piiContext } from "../src/usecases/deps.ts";
import { reviewSubmission } from "../src/usecases/review.ts";
import { SANDBOX_AUTO_APPROVER, submitBusiness, submitCreator } from "../src/usecases/submit.ts";
import { business, creator } from "./bodies.ts";
import { AT, fakes } from "./fakes.ts";

const sandbox: Tenant = { orgId: "org_unit", livemode: false };
const live: Tenant = { orgId: "org_unit", livemode: true };
const submitter = { requestId: "req_1", keyId: "key_1" };

describe("creator submissions", () => {
  it("a sandbox creator is approved at once; the approval is the system's, audited and announced", async () => {
    const { deps, store, participants } = fakes();
    participants.add(sandbox, "c1");
    const r = await submitCreator(deps, sandbox, submitter, "c1", creator());
    expect(r).toMatchObject({ participant_id: "c1", status: "approved", tax_certified: true, missing_fields: [] });
    const [row] = store.state.submissions;
    expect(row).toMatchObject({ status: "approved", livemode: false, tax_id_last4: "6789", submitted_at: AT, reviewed_at: AT });
    expect(store.statusOf({ subject: "creator", orgId: sandbox.orgId, livemode: false, participantId: "c1" })).toBe("approved");
    expect(store.state.reviewActions).toEqual([
      expect.objectContaining({ action: "auto_approve", actor: SANDBOX_AUTO_APPROVER, from_status: "pending", to_status: "approved", livemode: false }),
    ]);
    expect(store.state.events.map((e) => [e.type, e.id])).toEqual([["kyc.approved", store.state.reviewActions[0]!.event_id]]);
  });

  it("a live creator waits for review: under_review, announced, no decision recorded", async () => {
    const { deps, store, participants } = fakes();
    participants.add(live, "c1");
    const r = await submitCreator(deps, live, submitter, "c1", creator());
    expect(r).toMatchObject({ status: "under_review", tax_certified: false });
    expect(store.state.reviewActions).toEqual([]);
    expect(store.state.events).toEqual([
      expect.objectContaining({ type: "kyc.submitted", livemode: true, data: expect.objectContaining({ status: "under_review", previous_status: null }) }),
    ]);
  });

  it("personal data is sealed to its row; the clear columns and the event hold none of it", async () => {
    const { deps, store, participants } = fakes();
    participants.add(live, "c1");
    await submitCreator(deps, live, submitter, "c1", creator());
    const [row] = store.state.submissions;
    const { pii, ...clear } = row!;
    for (const secret of ["Ada Quill", "ada.quill@example.com", "1990-12-10", "Analytical Row", "file_passport"]) {
      expect(JSON.stringify(clear)).not.toContain(secret);
      expect(pii).not.toContain(secret);
      expect(JSON.stringify(store.state.events)).not.toContain(secret);
    }
    expect(deps.sealer!.openJson<{ email: string }>(pii, piiContext(row!.id)).email).toBe("ada.quill@example.com");
    expect(() => deps.sealer!.open(pii, piiContext("kycs_other"))).toThrow();
  });

  it("refusals store nothing: an unknown participant, no PII keys", async () => {
    const { deps, store, participants } = fakes();
    await expect(submitCreator(deps, sandbox, submitter, "nobody", creator())).rejects.toMatchObject({ code: "participant_not_found" });
    participants.add(sandbox, "c1");
    const noKeys = { ...deps, sealer: undefined };
    await expect(submitCreator(noKeys, sandbox, submitter, "c1", creator())).rejects.toMatchObject({ code: "service_unavailable" });
    expect(store.state).toMatchObject({ submissions: [], verifications: [], events: [], reviewActions: [] });
  });

  it("accepts the spec's required fields alone: sandbox approves at once, live lists what review needs and cannot be approved", async () => {
    const { deps, store, participants } = fakes();
    participants.add(sandbox, "c1");
    participants.add(live, "c1");
    const bare = creator({
      document_evidence: [{ type: "other", file_id: "file_other" }],
      certify_tax_info: true,
      tax_id_type: undefined,
      tax_id_last4: undefined,
    });
    const sbx = await submitCreator(deps, sandbox, submitter, "c1", bare);
    expect(sbx).toMatchObject({ status: "approved", missing_fields: ["document_evidence.government_id", "tax_id_type", "tax_id_last4"] });
    const pending = await submitCreator(deps, live, submitter, "c1", bare);
    expect(pending).toMatchObject({ status: "under_review", missing_fields: ["document_evidence.government_id", "tax_id_type", "tax_id_last4"] });
    const id = store.state.submissions.at(-1)?.id ?? "";
    await expect(reviewSubmission(store, { submissionId: id, action: "approve", actor: "ops:alice" })).rejects.toMatchObject({
      code: "invalid_state_transition",
      extra: { missing_fields: ["document_evidence.government_id", "tax_id_type", "tax_id_last4"] },
    });
    // Rejecting it is still open to the operator.
    expect(await reviewSubmission(store, { submissionId: id, action: "reject", actor: "ops:alice", reason: "no id document" })).toMatchObject({
      status: "rejected",
    });
  });
});

describe("business submissions", () => {
  it("never auto-approve, even in sandbox; a draft keeps what is missing and is not announced", async () => {
    const { deps, store } = fakes();
    const draft = await submitBusiness(deps, sandbox, submitter, business({ submit_for_review: false, beneficial_owners: [] }));
    expect(draft).toMatchObject({ status: "pending", missing_fields: ["beneficial_owners"] });
    expect(store.state.events).toEqual([]);
    const sent = await submitBusiness(deps, sandbox, submitter, business());
    expect(sent).toMatchObject({ status: "under_review", tax_certified: false });
    // The draft it replaced is superseded; the live verification is untouched.
    expect(store.state.submissions.map((s) => s.status)).toEqual(["superseded", "under_review"]);
    expect(store.statusOf({ subject: "business", orgId: sandbox.orgId, livemode: true })).toBeUndefined();
    expect(store.state.events.map((e) => e.type)).toEqual(["kyc.submitted"]);
    expect(store.state.reviewActions).toEqual([]);
  });
});
