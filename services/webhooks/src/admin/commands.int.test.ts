// The webhooks service's operator answers over NATS, as the operator CLI sends them: `webhooks replay` sends a
// delivery again (same webhook-id) with its audit row in webhooks.audit_log, leaves one in flight alone, and
// records refusals; `find` answers deliveries and endpoints by id without bodies or secrets, and each event's
// deliveries with their endpoint.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_FANOUT_OPERATIONS, adminOperation, rpcSubject, type FindRowsReply, type RpcReply } from "@treasury/contracts";
import { rpcCall } from "@treasury/service-kit";
import { waitFor } from "@treasury/testing";
import type { DeliveryView } from "../domain/present.ts";
import { authFor, newOrg, Receiver, startWebhooks, type Created, type Harness } from "../test-support.ts";
import type { AuditEntry } from "@treasury/contracts";

const RPC_TIMEOUT_TEST_MS = 20_000;
const ACTOR = "ops:bob";

let h: Harness;
let rcv: Receiver;

beforeAll(async () => {
  h = await startWebhooks();
  rcv = await Receiver.start();
});
afterAll(async () => {
  await rcv?.close();
  await h?.close();
});

async function call(operation: string, payload: unknown): Promise<RpcReply> {
  return rpcCall(await h.env.nats(), rpcSubject(h.env.prefix, "webhooks", operation), payload, { timeoutMs: RPC_TIMEOUT_TEST_MS });
}

async function replay(flags: Record<string, string | boolean>, reason?: string): Promise<RpcReply> {
  return call(adminOperation("webhooks replay"), { actor: ACTOR, flags, positionals: [], ...(reason === undefined ? {} : { reason }) });
}

function body(r: RpcReply): Record<string, unknown> {
  if (!r.ok) throw new Error(`failed: ${r.error.code} ${r.error.message}`);
  return r.body;
}

/** An audit row as the test reads it back. */
type AuditRow = Omit<AuditEntry, "source" | "id" | "at" | "action" | "details">;

async function lastReplayAudit(): Promise<AuditRow | undefined> {
  const [row] = await h.env.adminSql<AuditRow[]>`
    select actor, org_id, livemode, target_ids, reason, outcome, error_code, error
      from webhooks.audit_log where action = 'webhooks.replay' order by id desc limit 1`;
  return row;
}

/** An endpoint of a new org and one event delivered to it. */
async function delivered(): Promise<{ orgId: string; endpoint: Created; eventId: string; delivery: DeliveryView }> {
  const auth = authFor(newOrg());
  const endpoint = await h.manage<Created>(auth, { action: "create", url: rcv.url });
  const evt = await h.publish({ type: "checkout.completed", org_id: auth.org_id });
  const delivery = await waitFor(async () => {
    const [d] = await h.manage<DeliveryView[]>(auth, { action: "deliveries", endpoint_id: endpoint.id });
    return d?.status === "delivered" ? d : false;
  });
  return { orgId: auth.org_id, endpoint, eventId: evt.id, delivery };
}

describe("webhooks replay", () => {
  it("sends a delivery again with the same webhook-id, its row naming the delivery, event and endpoint", async () => {
    // Proves the answer, the re-send and the audit row written with it.
    const { orgId, endpoint, eventId, delivery } = await delivered();
    const answer = body(await replay({ delivery: delivery.id }, "support case 42"));
    expect(answer).toEqual({
      delivery: expect.objectContaining({ id: delivery.id, event_id: eventId, status: "retrying", attempts: 1, max_attempts: 4 }),
      replayed: true,
    });
    await waitFor(() => rcv.byEvent(eventId).length === 2);
    expect(new Set(rcv.byEvent(eventId).map((r) => r.headers["webhook-id"]))).toEqual(new Set([delivery.id]));
    expect(await lastReplayAudit()).toEqual({
      actor: ACTOR,
      org_id: orgId,
      livemode: false,
      target_ids: [delivery.id, eventId, endpoint.id],
      reason: "support case 42",
      outcome: "succeeded",
      error_code: null,
      error: null,
    });
  });

  it("leaves a delivery in flight as it is", async () => {
    // Proves replayed: false while an attempt's lease runs, and nothing made due.
    const { delivery } = await delivered();
    await h.env.adminSql`update webhooks.deliveries set lease_until = now() + interval '1 hour' where id = ${delivery.id}`;
    const answer = body(await replay({ delivery: delivery.id }, "incident"));
    expect(answer).toEqual({ delivery: expect.objectContaining({ id: delivery.id, status: "delivered" }), replayed: false });
    const [row] = await h.env.adminSql`select status, max_attempts from webhooks.deliveries where id = ${delivery.id}`;
    expect(row).toEqual({ status: "delivered", max_attempts: 4 });
  });

  it("needs a delivery and a reason, and records refusals", async () => {
    // Proves the validation errors, the not-found answer, and their failed rows.
    const { delivery } = await delivered();
    const refused = async (flags: Record<string, string | boolean>, reason?: string) => {
      const r = await replay(flags, reason);
      if (r.ok) throw new Error(`answered ${JSON.stringify(r.body)}`);
      return { code: r.error.code, message: r.error.message };
    };
    expect(await refused({}, "x")).toEqual({ code: "validation_error", message: "missing --delivery" });
    expect(await refused({ delivery: delivery.id })).toEqual({ code: "validation_error", message: "missing --reason" });
    expect(await refused({ delivery: delivery.id }, "  ")).toEqual({ code: "validation_error", message: "missing --reason" });
    expect(await lastReplayAudit()).toMatchObject({
      target_ids: [delivery.id, delivery.event_id, delivery.endpoint_id],
      outcome: "failed",
      error_code: "validation_error",
    });
    expect(await refused({ delivery: "whd_missing" }, "x")).toEqual({ code: "webhook_delivery_not_found", message: "Webhook delivery whd_missing not found" });
    expect(await lastReplayAudit()).toMatchObject({ org_id: null, target_ids: ["whd_missing"], outcome: "failed", error_code: "webhook_delivery_not_found" });
  });
});

describe("find", () => {
  it("answers deliveries (followed, without body) and endpoints (without secrets) by id", async () => {
    // Proves admin.find.rows: the hits, the omitted columns, and the scoped node of an id asked for without an org.
    const { orgId, endpoint, delivery } = await delivered();
    const r = body(
      await call(ADMIN_FANOUT_OPERATIONS.findRows, {
        nodes: [
          { kind: "delivery", id: delivery.id },
          { kind: "endpoint", id: endpoint.id, scope: { orgId, livemode: false } },
          { kind: "org", id: orgId },
        ],
        seed: true,
      }),
    ) as unknown as FindRowsReply;
    expect(r.hits.map((hit) => [hit.table, hit.row["id"], hit.follow])).toEqual([
      ["webhooks.deliveries", delivery.id, true],
      ["webhooks.endpoints", endpoint.id, false],
    ]);
    expect(r.hits[0]?.row).toMatchObject({ org_id: orgId, livemode: false, endpoint_id: endpoint.id, status: "delivered", attempts: 1 });
    expect(r.hits[0]?.row).not.toHaveProperty("body");
    expect(r.hits[1]?.row).toMatchObject({ url: rcv.url, is_active: true });
    for (const secret of ["secret", "previous_secret", "secret_sealed", "previous_secret_sealed"]) expect(r.hits[1]?.row).not.toHaveProperty(secret);
    expect(JSON.stringify(r)).not.toContain(endpoint.secret);
    expect(r.nodes).toEqual([{ kind: "delivery", id: delivery.id, scope: { orgId, livemode: false } }]);
  });

  it("answers each event's deliveries with their endpoint", async () => {
    // Proves admin.find.deliveries: the columns of the walk's delivery list, numbers as numbers.
    const { endpoint, eventId, delivery } = await delivered();
    const r = body(await call(ADMIN_FANOUT_OPERATIONS.findDeliveries, { event_ids: [eventId, "evt_unknown"] }));
    expect(r).toEqual({
      deliveries: [
        {
          id: delivery.id,
          event_id: eventId,
          endpoint_id: endpoint.id,
          endpoint_url: rcv.url,
          endpoint_active: true,
          endpoint_disabled_reason: null,
          status: "delivered",
          attempts: 1,
          max_attempts: 4,
          response_status: 200,
          response_time_ms: expect.any(Number),
          last_error: null,
          next_retry_at: null,
          lease_until: null,
          created_at: delivery.created_at,
          updated_at: expect.any(String),
          delivered_at: delivery.delivered_at,
        },
      ],
    });
    expect(body(await call(ADMIN_FANOUT_OPERATIONS.findDeliveries, { event_ids: [] }))).toEqual({ deliveries: [] });
    expect((await call(ADMIN_FANOUT_OPERATIONS.findDeliveries, { event_ids: "evt_x" })).ok).toBe(false);
  });
});
