// Proves the refunds service's operator answers over NATS as the CLI asks them, with the ledger and payments as
// real processes: `refunds set-policy` changes the shortfall policy and records it in refunds.audit_log in the
// same transaction (a refused attempt is recorded as failed, nothing changed), `refunds get-policy` reads it and
// records nothing, and `admin.find.rows` answers refunds, refund requests and sale references, leading to the
// refund's ledger transaction, which the ledger answers.
import { adminOperation, rpcSubject, type FindHit, type FindNode, type FindRowsReply, type RpcReply, type ServiceName } from "@treasury/contracts";
import { rpcCall } from "@treasury/service-kit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { authFor, err, newOrg, ok, recordSale, startRefunds, type RefundsHarness } from "../test-support.ts";

let h: RefundsHarness;
beforeAll(async () => {
  h = await startRefunds();
}, 120_000);
afterAll(async () => {
  await h?.close();
});

async function admin(service: ServiceName, operation: string, payload: unknown): Promise<RpcReply> {
  return rpcCall(await h.env.nats(), rpcSubject(h.env.prefix, service, operation), payload, { timeoutMs: 20_000 });
}

async function command(name: "refunds set-policy" | "refunds get-policy", flags: Record<string, string | boolean>, reason?: string): Promise<RpcReply> {
  return admin("refunds", adminOperation(name), { actor: "ops", flags, positionals: [], ...(reason === undefined ? {} : { reason }) });
}

async function find(service: ServiceName, nodes: FindNode[], seed = true): Promise<FindRowsReply> {
  return ok(await admin(service, "admin.find.rows", { nodes, seed })).body as unknown as FindRowsReply;
}

async function auditRows(org: string): Promise<Record<string, unknown>[]> {
  return h.env.adminSql`
    select actor, action, org_id, livemode, target_ids, reason, outcome, error_code, error, details
      from refunds.audit_log where org_id = ${org} order by id`;
}

const summary = (hits: readonly FindHit[]) => hits.map((x) => [x.table, x.row["id"], x.follow, "request_hash" in x.row]);

describe("refunds set-policy and get-policy", () => {
  it("sets the policy with its audit row in one transaction; reads it without one", async () => {
    const org = newOrg();
    expect(ok(await command("refunds get-policy", { org, env: "test" })).body).toEqual({ org_id: org, environment: "test", shortfall_policy: "receivable" });

    const set = ok(await command("refunds set-policy", { org, env: "test", shortfall: "refuse" }, "creator asked"));
    expect(set.body).toEqual({ org_id: org, environment: "test", shortfall_policy: "refuse" });
    expect(ok(await command("refunds get-policy", { org, env: "test" })).body["shortfall_policy"]).toBe("refuse");
    expect(ok(await command("refunds get-policy", { org, env: "live" })).body["shortfall_policy"]).toBe("receivable");
    const [stored] = await h.env.adminSql`select shortfall_policy from refunds.settings where org_id = ${org} and livemode = false`;
    expect(stored?.["shortfall_policy"]).toBe("refuse");

    const refused = err(await command("refunds set-policy", { org, env: "live", shortfall: "sometimes" }));
    expect([refused.code, refused.message]).toEqual(["validation_error", "--shortfall must be one of receivable, refuse"]);
    expect(ok(await command("refunds get-policy", { org, env: "live" })).body["shortfall_policy"]).toBe("receivable");
    expect(err(await command("refunds set-policy", { org, shortfall: "refuse" })).message).toBe("missing --env");
    expect(err(await command("refunds get-policy", { env: "test" })).message).toBe("missing --org");

    const rows = await auditRows(org);
    expect(rows).toEqual([
      {
        actor: "ops",
        action: "refunds.set-policy",
        org_id: org,
        livemode: false,
        target_ids: [org],
        reason: "creator asked",
        outcome: "succeeded",
        error_code: null,
        error: null,
        details: { shortfall_policy: "refuse", request_id: expect.any(String) },
      },
      expect.objectContaining({
        livemode: true,
        outcome: "failed",
        error_code: "validation_error",
        details: expect.objectContaining({ shortfall_policy: "sometimes" }),
      }),
      expect.objectContaining({ livemode: null, outcome: "failed", error: "missing --env", target_ids: [org] }),
    ]);
    const audit = ok(await admin("refunds", "admin.audit.list", { org_id: org, action: "refunds", limit: 10 })).body["entries"] as Record<string, unknown>[];
    expect(audit.map((e) => [e["source"], e["action"], e["outcome"]])).toEqual([
      ["refunds.audit_log", "refunds.set-policy", "failed"],
      ["refunds.audit_log", "refunds.set-policy", "failed"],
      ["refunds.audit_log", "refunds.set-policy", "succeeded"],
    ]);
  });
});

describe("admin.find.rows", () => {
  it("a refund, its ledger transaction by reference, its request, and a sale's refunds and requests within its org", async () => {
    const org = newOrg();
    const auth = authFor(org);
    const sale = await recordSale(h, auth, { amount: 2_000, creatorPercent: 50 });
    const refund = ok(await h.call("refunds", "createRefund", auth, { body: { sale_reference: sale.saleReference, amount: 300, reason: "damaged" } })).body[
      "refund"
    ] as Record<string, unknown>;
    const rr = ok(await h.call("refunds", "createRefundRequest", auth, { body: { sale_reference: sale.saleReference, amount: 100 } })).body[
      "refund_request"
    ] as Record<string, unknown>;
    const scope = { orgId: org, livemode: false };

    const found = await find("refunds", [{ kind: "refund", id: String(refund["id"]) }]);
    expect(summary(found.hits)).toEqual([["refunds.refunds", refund["id"], true, false]]);
    expect(found.hits[0]?.row).toMatchObject({
      sale_reference: sale.saleReference,
      status: "completed",
      refunded_amount: 300,
      ledger_reference: `refund:${String(refund["id"])}`,
    });
    const reference: FindNode = { kind: "ledger_reference", id: `refund|refund:${String(refund["id"])}`, scope };
    expect(found.nodes).toEqual([reference, { kind: "refund", id: refund["id"], scope }]);
    // Within its scope, only the ledger reference is new.
    expect((await find("refunds", [{ kind: "refund", id: String(refund["id"]), scope }])).nodes).toEqual([reference]);

    const posted = await find("ledger", [reference], false);
    expect(posted.hits.map((x) => [x.table, x.row["id"], x.follow])).toEqual([["ledger.transactions", refund["transaction_id"], true]]);

    expect(summary((await find("refunds", [{ kind: "refund_request", id: String(rr["id"]) }])).hits)).toEqual([
      ["refunds.refund_requests", rr["id"], true, false],
    ]);

    expect((await find("refunds", [{ kind: "sale", id: sale.saleReference }])).hits).toEqual([]);
    expect((await find("refunds", [{ kind: "sale", id: sale.saleReference, scope: { orgId: org, livemode: true } }])).hits).toEqual([]);
    const bySale = await find("refunds", [{ kind: "sale", id: sale.saleReference, scope: { orgId: org } }]);
    expect(summary(bySale.hits)).toEqual([
      ["refunds.refunds", refund["id"], true, false],
      ["refunds.refund_requests", rr["id"], true, false],
    ]);
    expect(bySale.nodes).toEqual([]);
    expect(await find("refunds", [{ kind: "transaction", id: String(refund["transaction_id"]) }])).toEqual({ hits: [], nodes: [] });
  });
});
