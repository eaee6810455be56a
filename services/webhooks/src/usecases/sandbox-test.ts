/**
 * sandboxSendTestWebhook: a sandbox event (default `payout.failed`) written to this service's outbox with no
 * balance change; it reaches endpoints through the same stream and fan-out as every other event.
 */
import { DomainError, isPublicEventType, newId, type Tenant } from "@treasury/contracts";
import type { Deps } from "./deps.ts";

export const DEFAULT_TEST_EVENT_TYPE = "payout.failed";

export interface TestEventResult {
  event_type: string;
  event_id: string;
  webhook_deliveries_queued: number;
}

function sampleData(type: string, eventId: string): Record<string, unknown> {
  if (type === "payout.failed") {
    return {
      payout_id: `po_test_${eventId.slice(4, 16)}`,
      status: "failed",
      failure_reason: "sandbox_test",
      amount_cents: 1000,
      currency: "USD",
      sandbox: true,
      test: true,
    };
  }
  return { sandbox: true, test: true };
}

/** Codes: sandbox_only (live keys), validation_error (unknown or internal event type), idempotency_conflict. */
export async function sendTestEvent(
  deps: Deps,
  s: Tenant,
  body: { idempotency_key?: string | undefined; event_type?: string | undefined; payload?: Record<string, unknown> | undefined },
): Promise<TestEventResult> {
  if (s.livemode) throw new DomainError("sandbox_only", undefined, { hint: "Use a test key (slk_test_…) for POST /v1/sandbox/webhooks/test" });
  const type = body.event_type ?? DEFAULT_TEST_EVENT_TYPE;
  if (!isPublicEventType(type)) {
    throw new DomainError("validation_error", `Invalid body: event_type: unknown event type "${type}"`, {
      details: [{ path: "event_type", message: "must be a public event type" }],
    });
  }
  return deps.store.transaction(async (tx) => {
    if (body.idempotency_key !== undefined) {
      const prior = await tx.findTestEvent(s, body.idempotency_key);
      if (prior && prior.event_type !== type) {
        throw new DomainError("idempotency_conflict", undefined, { hint: "Use a new idempotency_key for a different event_type" });
      }
      if (prior) return { event_type: prior.event_type, event_id: prior.event_id, webhook_deliveries_queued: prior.deliveries_queued };
    }
    const eventId = newId("evt");
    const queued = (await tx.matchingEndpointIds(s, type)).length;
    await tx.emit({
      id: eventId,
      type,
      org_id: s.orgId,
      livemode: s.livemode,
      data: { ...sampleData(type, eventId), ...(body.payload ?? {}) },
    });
    // A concurrent duplicate loses on the key and its transaction (and outbox row) rolls back.
    if (body.idempotency_key !== undefined)
      await tx.recordTestEvent(s, body.idempotency_key, { event_id: eventId, event_type: type, deliveries_queued: queued });
    return { event_type: type, event_id: eventId, webhook_deliveries_queued: queued };
  });
}
