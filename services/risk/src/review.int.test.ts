// Proves the review path on real PostgreSQL and NATS: a soft hit puts a movement under review with a
// risk.review_required event; `admin risk list|approve|deny` (as the CLI sends them) decide it once, each decision
// writing risk.decided with the evaluation, operation, key and decision, and an audit row in risk.audit_log; and
// `admin find` reaching an evaluation by its id and by the movement it was made for.
import { ADMIN_FANOUT_OPERATIONS, rpcSubject, type FindRowsReply } from "@treasury/contracts";
import { rpcCall } from "@treasury/service-kit";
import { waitFor } from "@treasury/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { authFor, err, evaluationOf, newOrg, ok, startRisk, type RiskHarness } from "./test-support.ts";

let h: RiskHarness;

beforeAll(async () => {
  h = await startRisk();
});
afterAll(async () => {
  await h?.close();
});

interface OutboxRow {
  type: string;
  payload: { data: Record<string, unknown> };
  published_at: Date | null;
}

async function events(orgId: string): Promise<OutboxRow[]> {
  return h.env.adminSql<OutboxRow[]>`select type, payload, published_at from risk.outbox where org_id = ${orgId} order by seq`;
}

/** A payout under review: an org whose soft policy it hits. */
async function underReview(key: string): Promise<{ org: string; id: string }> {
  const org = newOrg();
  ok(await h.call("createFraudPolicy", authFor(org), { body: { policy_type: "amount_limit", config: { max_amount_cents: 100 }, severity: "soft" } }));
  const e = evaluationOf(await h.evaluate({ org_id: org, livemode: false, operation: "payout", key, amount: 5_000, participant_id: "creator_9" }));
  expect(e).toMatchObject({ decision: "review", review: { status: "pending", actor: null }, hits: [{ severity: "soft", policy_type: "amount_limit" }] });
  return { org, id: e.id };
}

describe("review", () => {
  it("emits risk.review_required, lists the queue, and an approval emits risk.decided once", async () => {
    const { org, id } = await underReview("payout:po_review1");
    const [required] = await events(org);
    expect(required).toMatchObject({ type: "risk.review_required", payload: { data: { operation: "payout", key: "payout:po_review1", evaluation: { id } } } });
    // The relay publishes it to the stream.
    await waitFor(async () => (await events(org))[0]?.published_at !== null);

    const queue = ok(await h.admin("risk list", { flags: { org: org } })).body["evaluations"] as { id: string }[];
    expect(queue.map((e) => e.id)).toEqual([id]);

    const approved = ok(await h.admin("risk approve", { flags: { id }, reason: "known creator" })).body["evaluation"];
    expect(approved).toMatchObject({ id, decision: "review", review: { status: "approved", actor: "ops:alice", reason: "known creator" } });
    const decided = (await events(org)).filter((e) => e.type === "risk.decided");
    expect(decided).toHaveLength(1);
    expect(decided[0]?.payload.data).toMatchObject({
      decision: "approved",
      operation: "payout",
      key: "payout:po_review1",
      actor: "ops:alice",
      reason: "known creator",
      evaluation: { id, review: { status: "approved" } },
    });

    // Decided once: a second decision changes nothing and emits nothing.
    expect(err(await h.admin("risk deny", { flags: { id }, reason: "too late" })).code).toBe("invalid_state_transition");
    expect((await events(org)).filter((e) => e.type === "risk.decided")).toHaveLength(1);
    expect(ok(await h.admin("risk list", { flags: { org } })).body["evaluations"]).toEqual([]);
    const audit = await h.env.adminSql`select action, outcome, error_code, target_ids from risk.audit_log where org_id = ${org} order by id`;
    expect(audit).toEqual([
      { action: "risk.approve", outcome: "succeeded", error_code: null, target_ids: expect.arrayContaining([id, "payout:po_review1"]) },
      { action: "risk.deny", outcome: "failed", error_code: "invalid_state_transition", target_ids: expect.arrayContaining([id]) },
    ]);
  });

  it("a denial emits risk.decided with decision denied; an allowed or denied evaluation cannot be decided", async () => {
    const { org, id } = await underReview("payout:po_review2");
    const denied = ok(await h.admin("risk deny", { flags: { id }, reason: "card testing" })).body["evaluation"];
    expect(denied).toMatchObject({ review: { status: "denied" } });
    const decided = (await events(org)).find((e) => e.type === "risk.decided");
    expect(decided?.payload.data).toMatchObject({ decision: "denied", key: "payout:po_review2", evaluation: { id } });

    const plain = evaluationOf(await h.evaluate({ org_id: org, livemode: false, operation: "payout", key: "payout:small", amount: 50 }));
    expect(plain.decision).toBe("allow");
    expect(err(await h.admin("risk approve", { flags: { id: plain.id }, reason: "x" })).code).toBe("invalid_state_transition");
    expect(err(await h.admin("risk approve", { flags: { id: "feval_nope" }, reason: "x" })).code).toBe("evaluation_not_found");
    expect(err(await h.admin("risk approve", { flags: { id } })).message).toContain("--reason");
  });

  it("admin find answers an evaluation with its hits by its id, by the checkout session it was made for, and by a payout's key", async () => {
    const session = "5f0c8a52-6c1e-4d0e-9d7e-1b2a3c4d5e6f";
    const { org, id } = await underReview(`checkout:${session}`);
    const find = async (nodes: unknown[]) =>
      ok(await rpcCall(h.nc, rpcSubject(h.env.prefix, "risk", ADMIN_FANOUT_OPERATIONS.findRows), { nodes, seed: true }, { timeoutMs: 20_000 }))
        .body as unknown as FindRowsReply;
    const byId = await find([{ kind: "risk_evaluation", id }]);
    expect(byId.hits.map((x) => [x.table, x.row["id"] ?? x.row["evaluation_id"]])).toEqual([
      ["risk.evaluations", id],
      ["risk.evaluation_hits", id],
    ]);
    // The request's hash is the idempotency check's, not the operator's.
    expect(byId.hits[0]?.row).not.toHaveProperty("request_hash");
    const bySession = await find([{ kind: "uuid", id: session, scope: { orgId: org, livemode: false } }]);
    expect(bySession.hits.map((x) => x.row["id"])).toEqual([id]);
    expect((await find([{ kind: "uuid", id: session, scope: { orgId: newOrg(), livemode: false } }])).hits).toEqual([]);
    // A payout's risk_key node (the key it was evaluated under) leads to its evaluation too.
    const held = await underReview("payout:ref_find_1");
    const byKey = await find([{ kind: "risk_key", id: "payout:ref_find_1", scope: { orgId: held.org, livemode: false } }]);
    expect(byKey.hits.map((x) => x.row["id"])).toEqual([held.id]);
  });
});
