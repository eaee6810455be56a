// Proves opening a submission's personal data over in-memory ports: it needs a stated reason, and the access is
// recorded (a `view` row, who and why, no event, no status change) before the data is answered; an access that
// fails records nothing.
import { describe, expect, it } from "vitest";
import type { Tenant } from "@treasury/contracts";
import { showSubmission } from "../src/usecases/review.ts";
import { submitCreator } from "../src/usecases/submit.ts";
import { creator } from "./bodies.ts";
import { fakes, newSealer } from "./fakes.ts";

const live: Tenant = { orgId: "org_unit", livemode: true };
const VIEWED_AT = new Date("2026-05-01T00:00:00.000Z");

async function submitted() {
  const f = fakes();
  f.participants.add(live, "c1");
  await submitCreator(f.deps, live, { requestId: "req_1", keyId: "key_1" }, "c1", creator());
  return { ...f, id: f.store.state.submissions[0]!.id };
}

describe("showSubmission", () => {
  it("records who opened the personal data and why, then answers it", async () => {
    const { deps, store, id } = await submitted();
    const events = structuredClone(store.state.events);
    const shown = await showSubmission(store, deps.sealer!, { submissionId: id, actor: "ops:eve", reason: "review ticket 42", now: VIEWED_AT });
    expect(shown["submission"]).toMatchObject({
      id,
      status: "under_review",
      tax_id_last4: "6789",
      personal_data: { legal_name: "Ada Quill Lovelace", email: "ada.quill@example.com", date_of_birth: "1990-12-10" },
    });
    const view = { action: "view", from_status: "under_review", to_status: "under_review", actor: "ops:eve", reason: "review ticket 42", event_id: null };
    expect(store.state.reviewActions).toEqual([expect.objectContaining({ ...view, submission_id: id, livemode: true, created_at: VIEWED_AT })]);
    expect(shown["review_actions"]).toEqual([expect.objectContaining({ ...view, created_at: VIEWED_AT.toISOString() })]);
    expect(shown["history"]).toEqual([expect.objectContaining({ id, status: "under_review" })]);
    expect(store.state.events).toEqual(events);
    expect(store.state.submissions[0]!.status).toBe("under_review");
  });

  it("without a reason, or with keys that cannot open the data, nothing is answered and nothing recorded", async () => {
    const { deps, store, id } = await submitted();
    await expect(showSubmission(store, deps.sealer!, { submissionId: id, actor: "ops:eve" })).rejects.toMatchObject({
      code: "validation_error",
      details: [{ path: "reason" }],
    });
    await expect(showSubmission(store, newSealer("other"), { submissionId: id, actor: "ops:eve", reason: "ticket 7" })).rejects.toThrow();
    await expect(showSubmission(store, deps.sealer!, { submissionId: "kycs_missing", actor: "ops:eve", reason: "ticket 7" })).rejects.toMatchObject({
      code: "kyc_not_found",
    });
    expect(store.state.reviewActions).toEqual([]);
  });
});
