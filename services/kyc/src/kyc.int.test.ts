// Proves the kyc service through real RPC, PostgreSQL and JetStream: intake, drafts, history, sandbox auto-approval,
// operator decisions (audited, evented, atomic), the state rules, the internal creator status, and bad input.
import { jetstreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import postgres from "postgres";
import { eventsStreamName, eventSubject } from "@treasury/contracts";
import { waitFor } from "@treasury/testing";
import { pgKycStore } from "./store/verifications.ts";
import { listVerifications, reviewSubmission, showSubmission } from "./usecases/review.ts";
import { authFor, businessBody, creatorBody, err, newOrg, ok, startKyc, type KycHarness } from "./test-support.ts";

let h: KycHarness;

beforeAll(async () => {
  h = await startKyc();
});
afterAll(async () => {
  await h?.close();
});

type Profile = {
  status: string;
  missing_fields: string[];
  tax_certified: boolean;
  latest_submission: { id: string; status: string; submitted_at: string | null; reviewed_at: string | null; rejection_reason: string | null } | null;
};
const creatorOf = (r: { body: Record<string, unknown> }) => r.body["creator_kyc"] as Profile & { participant_id: string };
const businessOf = (r: { body: Record<string, unknown> }) => r.body["business_kyb"] as Profile;

let seq = 0;
function creator(livemode = false): { auth: ReturnType<typeof authFor>; pid: string } {
  const auth = authFor(newOrg(), livemode);
  const pid = `creator_${seq++}`;
  h.addParticipant(auth, pid);
  return { auth, pid };
}

async function submitCreator(auth: ReturnType<typeof authFor>, pid: string, body: Record<string, unknown>) {
  return h.call(h.svc, "submitCreatorVerification", auth, { params: { participant_id: pid }, body });
}

async function count(table: string, orgId: string): Promise<number> {
  const [row] = await h.env.adminSql<{ n: string }[]>`select count(*)::text as n from ${h.env.adminSql(`kyc.${table}`)} where org_id = ${orgId}`;
  return Number(row?.n ?? 0);
}

async function outboxTypes(orgId: string): Promise<string[]> {
  const rows = await h.env.adminSql<{ type: string }[]>`select type from kyc.outbox where org_id = ${orgId} order by seq`;
  return rows.map((r) => r.type);
}

describe("creator intake", () => {
  it("a sandbox submission auto-approves, certifies the tax profile, and is audited and evented once", async () => {
    // Proves the spec's sandbox rule end to end: answer, stored rows, audit row by the system, kyc.approved on the stream.
    const { auth, pid } = creator();
    const r = ok(await submitCreator(auth, pid, creatorBody()));
    expect(r.status).toBe(201);
    const kyc = creatorOf(r);
    expect(kyc).toMatchObject({ participant_id: pid, status: "approved", missing_fields: [], tax_certified: true });
    expect(kyc.latest_submission).toMatchObject({ status: "approved", rejection_reason: null });
    expect(kyc.latest_submission?.id).toMatch(/^kycs_[a-z0-9]{24}$/);
    expect(kyc.latest_submission?.reviewed_at).not.toBeNull();
    expect(ok(await h.call(h.svc, "getCreatorVerification", auth, { params: { participant_id: pid } })).body["creator_kyc"]).toEqual(kyc);

    const [audit] = await h.env.adminSql`select action, from_status, to_status, actor, event_id from kyc.review_actions where org_id = ${auth.org_id}`;
    expect(audit).toMatchObject({ action: "auto_approve", from_status: "pending", to_status: "approved", actor: "system:sandbox_auto_approval" });
    expect(await outboxTypes(auth.org_id)).toEqual(["kyc.approved"]);
    await waitFor(async () => (await h.env.adminSql`select 1 from kyc.outbox where org_id = ${auth.org_id} and published_at is null`).length === 0, {
      timeoutMs: 10_000,
    });
    const jsm = await jetstreamManager(await h.env.nats());
    const msg = await jsm.streams.getMessage(eventsStreamName(h.env.prefix), { last_by_subj: eventSubject(h.env.prefix, "kyc.approved") });
    const evt = msg?.json<{ id: string; type: string; org_id: string; data: Record<string, unknown> }>();
    expect(evt).toMatchObject({
      id: audit?.event_id,
      type: "kyc.approved",
      org_id: auth.org_id,
      data: { submission_id: kyc.latest_submission?.id, participant_id: pid, status: "approved", tax_certified: true },
    });
  });

  it("without certify_tax_info an approved creator is not tax-certified; the internal status says so", async () => {
    // Proves tax_certified needs both approval and certification, and the svc.kyc.getCreatorStatus answer.
    const { auth, pid } = creator();
    expect(creatorOf(ok(await submitCreator(auth, pid, creatorBody({ certify_tax_info: false })))).tax_certified).toBe(false);
    expect(ok(await h.call(h.svc, "getCreatorStatus", auth, { params: { participant_id: pid } })).body).toEqual({
      creator_kyc: { participant_id: pid, status: "approved", tax_certified: false },
    });
    const other = creator();
    expect(ok(await h.call(h.svc, "getCreatorStatus", other.auth, { params: { participant_id: other.pid } })).body).toEqual({
      creator_kyc: { participant_id: other.pid, status: "pending", tax_certified: false },
    });
  });

  it("a draft keeps missing fields, sends nothing to review, and emits no event", async () => {
    // Proves submit_for_review: false → pending with missing_fields (address parts, documents, tax id for certification).
    const { auth, pid } = creator();
    const empty = creatorOf(ok(await h.call(h.svc, "getCreatorVerification", auth, { params: { participant_id: pid } })));
    expect(empty).toEqual({
      participant_id: pid,
      status: "pending",
      missing_fields: [
        "legal_name",
        "email",
        "date_of_birth",
        "address.line1",
        "address.city",
        "address.postal_code",
        "address.country",
        "document_evidence.government_id",
      ],
      tax_certified: false,
      latest_submission: null,
    });
    const draft = creatorOf(
      ok(
        await submitCreator(auth, pid, {
          ...creatorBody({ address: { line1: "1 Way" }, document_evidence: [], tax_id_last4: undefined }),
          submit_for_review: false,
        }),
      ),
    );
    expect(draft).toMatchObject({
      status: "pending",
      tax_certified: false,
      missing_fields: ["address.city", "address.postal_code", "address.country", "document_evidence.government_id", "tax_id_last4"],
    });
    expect(draft.latest_submission).toMatchObject({ status: "pending", submitted_at: null, reviewed_at: null });
    expect(await outboxTypes(auth.org_id)).toEqual([]);
  });

  it("a live submission waits for review; an operator approves it in one audited, evented transaction", async () => {
    // Proves live → under_review → approve (decision, audit row and outbox row together), then the listing.
    const { auth, pid } = creator(true);
    const first = creatorOf(
      ok(await submitCreator(auth, pid, creatorBody({ document_evidence: [{ type: "government_id", url: "https://files.example/id.png" }] }))),
    );
    expect(first).toMatchObject({ status: "under_review", tax_certified: false, missing_fields: [] });
    const id = first.latest_submission!.id;
    expect(await outboxTypes(auth.org_id)).toEqual(["kyc.submitted"]);
    const queue = await listVerifications(pgKycStore(h.env.adminSql), { status: "under_review", orgId: auth.org_id });
    expect(queue).toEqual([
      expect.objectContaining({
        submission_id: id,
        subject: "creator",
        org_id: auth.org_id,
        livemode: true,
        participant_id: pid,
        document_types: ["government_id"],
        tax_id_last4: "6789",
      }),
    ]);
    expect(JSON.stringify(queue)).not.toContain("Lovelace");

    const decided = await reviewSubmission(pgKycStore(h.env.adminSql), { submissionId: id, action: "approve", actor: "ops:alice", reason: "documents match" });
    expect(decided).toMatchObject({
      submission_id: id,
      previous_status: "under_review",
      status: "approved",
      tax_certified: true,
      actor: "ops:alice",
      reason: "documents match",
    });
    const after = creatorOf(ok(await h.call(h.svc, "getCreatorVerification", auth, { params: { participant_id: pid } })));
    expect(after).toMatchObject({ status: "approved", tax_certified: true, latest_submission: { id, status: "approved", reviewed_at: decided.reviewed_at } });
    const [audit] = await h.env.adminSql`select actor, reason, from_status, to_status, event_id from kyc.review_actions where submission_id = ${id}`;
    expect(audit).toMatchObject({
      actor: "ops:alice",
      reason: "documents match",
      from_status: "under_review",
      to_status: "approved",
      event_id: decided.event_id,
    });
    expect(await outboxTypes(auth.org_id)).toEqual(["kyc.submitted", "kyc.approved"]);
  });

  it("a decision that fails part-way leaves nothing behind: no status change, no audit row, no event", async () => {
    // Proves decision + audit + outbox share one transaction (a trigger makes the audit insert fail after the status update).
    const { auth, pid } = creator(true);
    const id = creatorOf(ok(await submitCreator(auth, pid, creatorBody({ document_evidence: [{ type: "government_id", file_id: "f1" }] })))).latest_submission!
      .id;
    await h.env.adminSql.unsafe(`
      create function kyc.fail_for_saboteur() returns trigger language plpgsql as $$
      begin if new.actor = 'ops:saboteur' then raise exception 'audit refused'; end if; return new; end $$;
      create trigger fail_for_saboteur before insert on kyc.review_actions for each row execute function kyc.fail_for_saboteur();`);
    try {
      await expect(reviewSubmission(pgKycStore(h.env.adminSql), { submissionId: id, action: "approve", actor: "ops:saboteur" })).rejects.toThrow(
        /audit refused/,
      );
    } finally {
      await h.env.adminSql.unsafe("drop trigger fail_for_saboteur on kyc.review_actions; drop function kyc.fail_for_saboteur();");
    }
    const [sub] = await h.env.adminSql`select status, reviewed_at from kyc.submissions where id = ${id}`;
    expect(sub).toMatchObject({ status: "under_review", reviewed_at: null });
    expect((await h.env.adminSql`select status from kyc.creator_verifications where participant_id = ${pid} and org_id = ${auth.org_id}`)[0]?.status).toBe(
      "under_review",
    );
    expect(await count("review_actions", auth.org_id)).toBe(0);
    expect(await outboxTypes(auth.org_id)).toEqual(["kyc.submitted"]);
  });

  it("keeps every submission; a new one supersedes the undecided one, which can no longer be decided", async () => {
    // Proves history, the latest pointer and the refusal to decide a replaced submission.
    const { auth, pid } = creator(true);
    const body = creatorBody({ document_evidence: [{ type: "government_id", file_id: "f1" }] });
    const a = creatorOf(ok(await submitCreator(auth, pid, body))).latest_submission!.id;
    const b = creatorOf(ok(await submitCreator(auth, pid, { ...body, legal_name: "Ada Q. Lovelace" }))).latest_submission!.id;
    expect(a).not.toBe(b);
    const rows = await h.env.adminSql<
      { id: string; status: string }[]
    >`select id, status from kyc.submissions where org_id = ${auth.org_id} order by created_at`;
    expect(rows).toEqual([
      { id: a, status: "superseded" },
      { id: b, status: "under_review" },
    ]);
    const stale = await reviewSubmission(pgKycStore(h.env.adminSql), { submissionId: a, action: "approve", actor: "ops:bob" }).catch((e: unknown) => e);
    expect(stale).toMatchObject({ code: "invalid_state_transition" });
    expect((await reviewSubmission(pgKycStore(h.env.adminSql), { submissionId: b, action: "approve", actor: "ops:bob" })).status).toBe("approved");
  });

  it("enforces the state rules: reject needs a reason, suspension blocks submissions, only legal moves", async () => {
    // Proves reject/suspend/approve transitions, rejection_reason on the answer and refusals with the current state.
    const { auth, pid } = creator(true);
    const body = creatorBody({ document_evidence: [{ type: "government_id", file_id: "f1" }] });
    const id = creatorOf(ok(await submitCreator(auth, pid, body))).latest_submission!.id;
    await expect(reviewSubmission(pgKycStore(h.env.adminSql), { submissionId: id, action: "reject", actor: "ops:c" })).rejects.toMatchObject({
      code: "validation_error",
    });
    await expect(reviewSubmission(pgKycStore(h.env.adminSql), { submissionId: "kycs_missing", action: "approve", actor: "ops:c" })).rejects.toMatchObject({
      code: "kyc_not_found",
    });
    expect((await reviewSubmission(pgKycStore(h.env.adminSql), { submissionId: id, action: "reject", actor: "ops:c", reason: "blurry document" })).status).toBe(
      "rejected",
    );
    const rejected = creatorOf(ok(await h.call(h.svc, "getCreatorVerification", auth, { params: { participant_id: pid } })));
    expect(rejected).toMatchObject({ status: "rejected", tax_certified: false, latest_submission: { id, rejection_reason: "blurry document" } });
    await expect(reviewSubmission(pgKycStore(h.env.adminSql), { submissionId: id, action: "approve", actor: "ops:c" })).rejects.toMatchObject({
      code: "invalid_state_transition",
      extra: { state: "rejected" },
    });

    const id2 = creatorOf(ok(await submitCreator(auth, pid, body))).latest_submission!.id;
    await reviewSubmission(pgKycStore(h.env.adminSql), { submissionId: id2, action: "approve", actor: "ops:c" });
    expect(err(await submitCreator(auth, pid, { ...body, submit_for_review: false }))).toMatchObject({
      code: "invalid_state_transition",
      extra: { state: "approved" },
    });
    expect((await reviewSubmission(pgKycStore(h.env.adminSql), { submissionId: id2, action: "suspend", actor: "ops:c", reason: "chargebacks" })).status).toBe(
      "suspended",
    );
    expect(ok(await h.call(h.svc, "getCreatorStatus", auth, { params: { participant_id: pid } })).body["creator_kyc"]).toMatchObject({
      status: "suspended",
      tax_certified: false,
    });
    const before = await count("submissions", auth.org_id);
    expect(err(await submitCreator(auth, pid, body))).toMatchObject({ code: "invalid_state_transition", extra: { state: "suspended" } });
    expect(await count("submissions", auth.org_id)).toBe(before);
    expect((await reviewSubmission(pgKycStore(h.env.adminSql), { submissionId: id2, action: "approve", actor: "ops:c", reason: "resolved" })).status).toBe(
      "approved",
    );
    const actions = await h.env.adminSql<
      { action: string; to_status: string }[]
    >`select action, to_status from kyc.review_actions where org_id = ${auth.org_id} order by id`;
    expect(actions.map((a) => `${a.action}:${a.to_status}`)).toEqual(["reject:rejected", "approve:approved", "suspend:suspended", "approve:approved"]);
    expect(await outboxTypes(auth.org_id)).toEqual(["kyc.submitted", "kyc.rejected", "kyc.submitted", "kyc.approved", "kyc.suspended", "kyc.approved"]);
  });

  it("keeps sandbox and live creator verifications apart and refuses unknown participants", async () => {
    // Proves participant_not_found from the ledger, and that a live key does not see a sandbox verification.
    const { auth, pid } = creator();
    ok(await submitCreator(auth, pid, creatorBody()));
    const live = { ...auth, livemode: true };
    expect(err(await h.call(h.svc, "getCreatorVerification", live, { params: { participant_id: pid } })).code).toBe("participant_not_found");
    h.addParticipant(live, pid);
    expect(creatorOf(ok(await h.call(h.svc, "getCreatorVerification", live, { params: { participant_id: pid } }))).status).toBe("pending");
    const before = await count("submissions", auth.org_id);
    expect(err(await submitCreator(auth, "nobody", creatorBody())).code).toBe("participant_not_found");
    expect(await count("submissions", auth.org_id)).toBe(before);
  });
});

describe("concurrency and review", () => {
  it("concurrent first submissions of one creator leave one latest submission and supersede the others", async () => {
    // Proves the per-verification lock: no duplicate-key failure, exactly one submission under review, the rest superseded.
    const { auth, pid } = creator(true);
    const body = creatorBody({ document_evidence: [{ type: "government_id", file_id: "f1" }] });
    const replies = await Promise.all(Array.from({ length: 6 }, () => submitCreator(auth, pid, body)));
    for (const r of replies) expect(ok(r).status).toBe(201);
    const rows = await h.env.adminSql<
      { status: string; n: number }[]
    >`select status, count(*)::int as n from kyc.submissions where org_id = ${auth.org_id} group by status order by status`;
    expect(rows).toEqual([
      { status: "superseded", n: 5 },
      { status: "under_review", n: 1 },
    ]);
    const [v] = await h.env
      .adminSql`select v.status, s.status as latest_status from kyc.creator_verifications v join kyc.submissions s on s.id = v.latest_submission_id where v.org_id = ${auth.org_id}`;
    expect(v).toEqual({ status: "under_review", latest_status: "under_review" });
  });

  it("an operator opens a submission's personal data with a stated reason; the access is audited without an event", async () => {
    // Proves showSubmission: personal data, history, audit trail, and a `view` row that changes nothing else.
    const { auth, pid } = creator(true);
    const body = creatorBody({ document_evidence: [{ type: "government_id", file_id: "f1" }] });
    const first = creatorOf(ok(await submitCreator(auth, pid, body))).latest_submission!.id;
    const second = creatorOf(ok(await submitCreator(auth, pid, { ...body, email: "ada.new@example.com" }))).latest_submission!.id;
    const sealer = h.svc.deps.sealer!;
    await expect(showSubmission(pgKycStore(h.env.adminSql), sealer, { submissionId: second, actor: "ops:eve" })).rejects.toMatchObject({
      code: "validation_error",
    });
    const shown = await showSubmission(pgKycStore(h.env.adminSql), sealer, { submissionId: second, actor: "ops:eve", reason: "review ticket 42" });
    expect(shown["submission"]).toMatchObject({
      id: second,
      status: "under_review",
      personal_data: { legal_name: "Ada Quill Lovelace", email: "ada.new@example.com", address: { city: "London" }, documents: [{ file_id: "f1" }] },
    });
    expect((shown["history"] as { id: string; status: string }[]).map((x) => [x.id, x.status])).toEqual([
      [first, "superseded"],
      [second, "under_review"],
    ]);
    expect(shown["review_actions"]).toEqual([expect.objectContaining({ action: "view", actor: "ops:eve", reason: "review ticket 42", event_id: null })]);
    expect(await outboxTypes(auth.org_id)).toEqual(["kyc.submitted", "kyc.submitted"]);
    expect((await h.env.adminSql`select status from kyc.submissions where id = ${second}`)[0]?.status).toBe("under_review");
  });
});

describe("business intake", () => {
  it("never auto-approves, is kept per environment, and approval certifies it", async () => {
    // Proves KYB in sandbox goes to review, the live key does not see it, and approval certifies the sandbox record only.
    const auth = authFor(newOrg());
    const r = ok(await h.call(h.svc, "submitBusinessVerification", auth, { body: businessBody() }));
    expect(r.status).toBe(201);
    const kyb = businessOf(r);
    expect(kyb).toMatchObject({ status: "under_review", tax_certified: false, missing_fields: [] });
    const live = { ...auth, livemode: true };
    expect(businessOf(ok(await h.call(h.svc, "getBusinessVerification", live)))).toMatchObject({ status: "pending", latest_submission: null });
    await reviewSubmission(pgKycStore(h.env.adminSql), { submissionId: kyb.latest_submission!.id, action: "approve", actor: "ops:d" });
    expect(businessOf(ok(await h.call(h.svc, "getBusinessVerification", auth)))).toMatchObject({ status: "approved", tax_certified: true });
    const rows = await h.env.adminSql`select livemode, status from kyc.business_verifications where org_id = ${auth.org_id} order by livemode`;
    expect(rows).toEqual([{ livemode: false, status: "approved" }]);
    expect(businessOf(ok(await h.call(h.svc, "getBusinessVerification", live)))).toMatchObject({ status: "pending", latest_submission: null });
  });

  it("lists what review needs for each business type, on an empty profile and on drafts", async () => {
    // Proves missing_fields for a business: contact, address, tax id, formation document, owners.
    const auth = authFor(newOrg());
    expect(businessOf(ok(await h.call(h.svc, "getBusinessVerification", auth)))).toEqual({
      status: "pending",
      tax_certified: false,
      latest_submission: null,
      missing_fields: [
        "business_type",
        "legal_name",
        "primary_contact.name",
        "primary_contact.email",
        "business_address.line1",
        "business_address.city",
        "business_address.postal_code",
        "business_address.country",
        "tax_id_type",
        "tax_id_last4",
        "document_evidence.government_id",
      ],
    });
    const draft = (body: Record<string, unknown>) => h.call(h.svc, "submitBusinessVerification", auth, { body: { ...body, submit_for_review: false } });
    expect(businessOf(ok(await draft(businessBody({ beneficial_owners: [{ name: "G" }], document_evidence: [] })))).missing_fields).toEqual([
      "document_evidence.articles_of_incorporation",
      "beneficial_owners.0.date_of_birth",
    ]);
    expect(businessOf(ok(await draft(businessBody({ beneficial_owners: undefined })))).missing_fields).toEqual(["beneficial_owners"]);
    expect(businessOf(ok(await draft(businessBody({ business_type: "sole_proprietor", beneficial_owners: undefined })))).missing_fields).toEqual([
      "document_evidence.government_id",
    ]);
    expect(
      businessOf(ok(await draft(businessBody({ business_type: "nonprofit", beneficial_owners: undefined, document_evidence: [{ type: "ein_letter" }] }))))
        .missing_fields,
    ).toEqual([]);
  });
});

describe("bad input", () => {
  it("answers validation_error naming the field, and stores nothing", async () => {
    // Proves each field's check over RPC (the gateway checks too) and that a refused submission leaves no row.
    const { auth, pid } = creator();
    const live = { ...auth, livemode: true };
    h.addParticipant(live, pid);
    const cases: [Record<string, unknown>, string, typeof auth][] = [
      [{ email: "not-an-email" }, "email", auth],
      [{ date_of_birth: "1990-02-30" }, "date_of_birth", auth],
      [{ date_of_birth: "10/12/1990" }, "date_of_birth", auth],
      [{ date_of_birth: "2999-01-01" }, "date_of_birth", auth],
      [{ document_evidence: [{ type: "passport" }] }, "document_evidence.0.type", auth],
      [{ document_evidence: [{ type: "government_id", url: "ftp://files/x" }] }, "document_evidence.0.url", auth],
      [{ document_evidence: [{ type: "government_id" }] }, "document_evidence.0", live],
      [{ tax_id_type: "vat" }, "tax_id_type", auth],
      [{ tax_id_last4: "123456789" }, "tax_id_last4", auth],
      [{ metadata: { ssn: "123-45-6789" } }, "metadata.ssn", auth],
      [{ address: { line1: "EIN 12-3456789", city: "X", postal_code: "1", country: "US" } }, "address.line1", auth],
      [{ display_name: "123456789" }, "display_name", auth],
      [{ address: { line1: "1", city: "X", postal_code: "1", country: "USA" } }, "address.country", auth],
      [{ business_type: "nonprofit" }, "business_type", auth],
      [{ certify_tax_info: "yes" }, "certify_tax_info", auth],
      [{ legal_name: "" }, "legal_name", auth],
      [{ address: undefined }, "address", auth],
    ];
    for (const [patch, path, who] of cases) {
      const e = err(await submitCreator(who, pid, creatorBody(patch)));
      expect(e.code, path).toBe("validation_error");
      expect(
        e.details?.map((d) => d.path),
        path,
      ).toContain(path);
      expect(e.message).not.toMatch(/\d{3}-\d{2}-\d{4}|\d{9}/);
    }
    const business: [Record<string, unknown>, string][] = [
      [{ business_type: "trust" }, "business_type"],
      [{ primary_contact: { email: "nope" } }, "primary_contact.email"],
      [{ primary_contact: { name: "G", email: "g@x.io", phone: "call me" } }, "primary_contact.phone"],
      [{ beneficial_owners: [{ name: "G", date_of_birth: "1985-13-01" }] }, "beneficial_owners.0.date_of_birth"],
      [{ beneficial_owners: [{ name: "G", date_of_birth: "1985-01-01", ownership_percent: 101 }] }, "beneficial_owners.0.ownership_percent"],
      [{ beneficial_owners: [{ name: "G", date_of_birth: "1985-01-01", email: "123456789@x.io" }] }, "beneficial_owners.0.email"],
      [{ document_evidence: "articles" }, "document_evidence"],
      [{ metadata: { "12-3456789": "x" } }, "metadata.12-3456789"],
    ];
    for (const [patch, path] of business) {
      const e = err(await h.call(h.svc, "submitBusinessVerification", auth, { body: businessBody(patch) }));
      expect(e.code, path).toBe("validation_error");
      expect(
        e.details?.map((d) => d.path),
        path,
      ).toContain(path);
    }
    expect(await count("submissions", auth.org_id)).toBe(0);
    expect(await count("business_verifications", auth.org_id)).toBe(0);
    expect(await outboxTypes(auth.org_id)).toEqual([]);
    expect(err(await h.call(h.svc, "getCreatorVerification", auth, { params: { participant_id: "bad id!" } })).code).toBe("validation_error");
  });
});

describe("audit trail", () => {
  it("review actions are append-only, for the service's role and for anyone", async () => {
    // Proves the database refuses UPDATE, DELETE and TRUNCATE of kyc.review_actions.
    const { auth, pid } = creator();
    ok(await submitCreator(auth, pid, creatorBody()));
    const asService = postgres(h.env.dbUrl("kyc"), { max: 1, onnotice: () => {} });
    try {
      await expect(asService`update kyc.review_actions set actor = 'someone else' where org_id = ${auth.org_id}`).rejects.toThrow(/append-only/);
      await expect(asService`delete from kyc.review_actions where org_id = ${auth.org_id}`).rejects.toThrow(/append-only/);
      await expect(h.env.adminSql`delete from kyc.review_actions`).rejects.toThrow(/append-only/);
      await expect(h.env.adminSql`truncate kyc.review_actions cascade`).rejects.toThrow(/append-only/);
    } finally {
      await asService.end({ timeout: 5 });
    }
    expect(await count("review_actions", auth.org_id)).toBe(1);
  });
});
