// Proves the evaluation path on real PostgreSQL and NATS: velocity limits exact under concurrent evaluations and
// kept across a restart, a retried key answered with its first evaluation and counted once, the no-policy answer,
// the ledger's figures read for payout_ratio, and policies' validation, listing and deletion; an org-wide limit
// exact across two replicas recording in batches, and a batch PostgreSQL refuses failing only its bad evaluation.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseCents } from "@treasury/contracts";
import { proposal } from "../test/proposal.ts";
import { pgEvaluationStore } from "./store/evaluations.ts";
import { authFor, err, evaluationOf, newOrg, ok, startRisk, type RiskHarness } from "./test-support.ts";

let h: RiskHarness;

beforeAll(async () => {
  h = await startRisk();
});
afterAll(async () => {
  await h?.close();
});

async function createPolicy(orgId: string, body: Record<string, unknown>, livemode = false): Promise<string> {
  const reply = ok(await h.call("createFraudPolicy", authFor(orgId, livemode), { body }));
  expect(reply.status).toBe(201);
  return (reply.body["policy"] as { id: string }).id;
}

function payout(orgId: string, key: string, extra: Record<string, unknown> = {}) {
  return h.evaluate({ org_id: orgId, livemode: false, operation: "payout", key, amount: 1_000, participant_id: "creator_1", ...extra });
}

async function counterRows(orgId: string): Promise<number> {
  const [row] = await h.env.adminSql<{ n: number }[]>`select count(*)::int as n from risk.counter_events where org_id = ${orgId}`;
  return row?.n ?? 0;
}

describe("velocity", () => {
  it("allows exactly max_count of 20 parallel evaluations, and a restart keeps the count", async () => {
    const org = newOrg();
    await createPolicy(org, { policy_type: "velocity", config: { subject: "participant", max_count: 5, window_seconds: 3_600 }, applies_to: ["payout"] });
    const replies = await Promise.all(Array.from({ length: 20 }, (_, i) => payout(org, `payout:po_par${i}`)));
    const decisions = replies.map((r) => evaluationOf(r).decision);
    expect(decisions.filter((d) => d === "allow")).toHaveLength(5);
    expect(decisions.filter((d) => d === "deny")).toHaveLength(15);
    expect(await counterRows(org)).toBe(5);
    const denied = evaluationOf(replies[decisions.indexOf("deny")] ?? replies[0]!);
    expect(denied.hits).toEqual([expect.objectContaining({ policy_type: "velocity", severity: "hard", reason: expect.stringContaining("at most 5") })]);

    // Another participant has a counter of its own.
    expect(evaluationOf(await payout(org, "payout:po_other", { participant_id: "creator_2" })).decision).toBe("allow");

    await h.svc.stop();
    h.svc = await h.restart();
    expect(evaluationOf(await payout(org, "payout:po_after_restart")).decision).toBe("deny");
    expect(await counterRows(org)).toBe(6);
  });

  it("counts amounts too, and a denied movement takes nothing from the window", async () => {
    const org = newOrg();
    await createPolicy(org, { policy_type: "velocity", config: { subject: "org", max_amount_cents: 2_500, window_seconds: 60 } });
    expect(evaluationOf(await payout(org, "payout:a", { amount: 2_000 })).decision).toBe("allow");
    expect(evaluationOf(await payout(org, "payout:b", { amount: 1_000 })).decision).toBe("deny");
    expect(evaluationOf(await payout(org, "payout:c", { amount: 500 })).decision).toBe("allow");
  });
});

describe("batches", () => {
  it("keeps an org-wide limit exact across two replicas, each recording its evaluations in batches", async () => {
    const org = newOrg();
    await createPolicy(org, { policy_type: "velocity", config: { subject: "org", max_count: 7, window_seconds: 3_600 }, applies_to: ["payout"] });
    const second = await h.restart();
    const replies = await Promise.all(Array.from({ length: 60 }, (_, i) => payout(org, `payout:po_rep${i}`, { participant_id: `creator_${i % 9}` })));
    await second.stop();
    const decisions = replies.map((r) => evaluationOf(r).decision);
    expect(decisions.filter((d) => d === "allow")).toHaveLength(7);
    expect(await counterRows(org)).toBe(7);
  });

  it("slides a window by its running figures: what left it is subtracted, a long pause counts it again", async () => {
    const org = newOrg();
    await createPolicy(org, { policy_type: "velocity", config: { subject: "org", max_count: 3, max_amount_cents: 10_000, window_seconds: 60 } });
    const decide = async (key: string, amount = 1_000) => evaluationOf(await payout(org, key, { amount })).decision;
    const totals = async () =>
      (await h.env.adminSql<{ n: string; amount: string }[]>`select n::text, amount::text from risk.counter_totals where org_id = ${org}`)[0];
    const advance = (seconds: number) => h.svc.clock.sync(org, h.svc.clock.advancedSeconds(org) + seconds);
    for (const k of ["w1", "w2", "w3"]) expect(await decide(k)).toBe("allow");
    expect(await decide("w4")).toBe("deny");
    advance(30);
    expect(await decide("w5", 9_000)).toBe("deny"); // 3 still in the window
    advance(31);
    // The first three left the window: the running figures lose them and take this one.
    expect(await decide("w6", 9_000)).toBe("allow");
    expect(await totals()).toEqual({ n: "1", amount: "9000" });
    expect(await decide("w7", 2_000)).toBe("deny"); // 9,000 + 2,000 is over the amount
    advance(2 * 86_400);
    expect(await decide("w8", 2_000)).toBe("allow");
    expect(await totals()).toEqual({ n: "1", amount: "2000" });
  });

  it("fails only the evaluation PostgreSQL refuses, and records the others of its batch", async () => {
    const store = pgEvaluationStore(h.env.adminSql);
    const tenant = { orgId: newOrg(), livemode: false };
    const need = { policyId: "fpol_batch", counter: "fpol_batch:org", since: new Date(Date.now() - 60_000) };
    const record = (key: string, amount: number) =>
      store.record(tenant, "internal", key, [need], () => ({
        evaluation: {
          id: `feval_${key}_${tenant.orgId}`,
          tenant,
          source: "internal",
          key,
          requestHash: "h",
          decision: "allow",
          proposal: proposal({ amount: parseCents(amount) }),
          hits: [],
          review: null,
          createdAt: new Date(),
        },
        counted: [need],
        event: undefined,
        alerts: [],
      }));
    // An amount of 0 breaks the evaluations' check constraint: the batch as a statement is refused.
    const out = await Promise.allSettled([record("a", 100), record("zero", 0), record("b", 200)]);
    expect(out.map((o) => o.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect(await counterRows(tenant.orgId)).toBe(2);
  });
});

describe("idempotency", () => {
  it("answers a retried key with its first evaluation and counts it once, concurrent retries included", async () => {
    const org = newOrg();
    await createPolicy(org, { policy_type: "velocity", config: { subject: "participant", max_count: 2, window_seconds: 3_600 } });
    const first = evaluationOf(await payout(org, "payout:po_retry"));
    expect(first).toMatchObject({ decision: "allow", key: "payout:po_retry", operation: "payout", amount: 1_000, duplicate: false });
    const again = await Promise.all(Array.from({ length: 5 }, () => payout(org, "payout:po_retry")));
    for (const r of again) expect(evaluationOf(r)).toMatchObject({ id: first.id, decision: "allow", duplicate: true });
    expect(await counterRows(org)).toBe(1);
    // A fresh key racing its own retries: one evaluation, one count.
    const raced = await Promise.all(Array.from({ length: 6 }, () => payout(org, "payout:po_race")));
    expect(new Set(raced.map((r) => evaluationOf(r).id)).size).toBe(1);
    expect(raced.filter((r) => evaluationOf(r).duplicate === false)).toHaveLength(1);
    expect(await counterRows(org)).toBe(2);
  });

  it("answers an API key reused with another body idempotency_conflict, and the same body its evaluation", async () => {
    const auth = authFor(newOrg());
    const body = { idempotency_key: "eval_1", amount: 700 };
    const first = ok(await h.call("createFraudEvaluation", auth, { body }));
    expect(first.status).toBe(201);
    const replay = ok(await h.call("createFraudEvaluation", auth, { body }));
    expect(replay).toMatchObject({ status: 200, body: { idempotent: true, evaluation: { id: (first.body["evaluation"] as { id: string }).id } } });
    expect(err(await h.call("createFraudEvaluation", auth, { body: { ...body, amount: 701 } })).code).toBe("idempotency_conflict");
    // The money path's keys are another namespace: the same string there is a new evaluation.
    expect(evaluationOf(await h.evaluate({ org_id: auth.org_id, livemode: false, operation: "payout", key: "eval_1", amount: 5 })).duplicate).toBe(false);
  });
});

describe("policies and reads", () => {
  it("allows an org with no policy for the operation without reading the ledger, and stores the evaluation", async () => {
    const org = newOrg();
    await createPolicy(org, { policy_type: "payout_ratio", config: { max_percent_of_30d_sales: 10 }, applies_to: ["checkout"] });
    const reads = h.ledgerReads();
    const e = evaluationOf(await payout(org, "payout:po_fast"));
    expect(e).toMatchObject({ decision: "allow", hits: [] });
    expect(h.ledgerReads()).toBe(reads);
    expect(evaluationOf(await h.call("getFraudEvaluation", authFor(org), { params: { evaluation_id: e.id } })).id).toBe(e.id);
  });

  it("reads the participant's sales from the ledger for payout_ratio", async () => {
    const org = newOrg();
    await createPolicy(org, { policy_type: "payout_ratio", config: { max_percent_of_30d_sales: 50 } });
    h.setSales(org, "creator_1", { sales_count: 4, gross_cents: 10_000, refunded_cents: 0 });
    expect(evaluationOf(await payout(org, "payout:ok", { amount: 5_000 })).decision).toBe("allow");
    const over = evaluationOf(await payout(org, "payout:over", { amount: 5_001 }));
    expect(over).toMatchObject({ decision: "deny", hits: [{ policy_type: "payout_ratio" }] });
  });

  it("refuses a bad config naming the field, lists by tenant, and stops applying a deleted policy", async () => {
    const org = newOrg();
    const bad = err(await h.call("createFraudPolicy", authFor(org), { body: { policy_type: "velocity", config: { subject: "ip", window_seconds: 0 } } }));
    expect(bad.code).toBe("validation_error");
    expect(bad.details?.map((d) => d.path)).toContain("config.window_seconds");
    const id = await createPolicy(org, { policy_type: "amount_limit", config: { max_amount_cents: 100 } });
    await createPolicy(org, { policy_type: "amount_limit", config: { max_amount_cents: 100 } }, true);
    const listed = ok(await h.call("listFraudPolicies", authFor(org))).body;
    expect(listed).toMatchObject({ total: 1, policies: [{ id, policy_type: "amount_limit", severity: "hard", enabled: true, livemode: false }] });
    expect(evaluationOf(await payout(org, "payout:big")).decision).toBe("deny");
    expect(err(await h.call("deleteFraudPolicy", authFor(org, true), { params: { policy_id: id } })).code).toBe("policy_not_found");
    expect(ok(await h.call("deleteFraudPolicy", authFor(org), { params: { policy_id: id } })).body).toMatchObject({ deleted: true, policy: { id } });
    expect(evaluationOf(await payout(org, "payout:big_after")).decision).toBe("allow");
    expect(ok(await h.call("listFraudPolicies", authFor(org))).body["total"]).toBe(0);
    expect(err(await h.call("deleteFraudPolicy", authFor(org), { params: { policy_id: id } })).code).toBe("policy_not_found");
  });
});
