/**
 * Every port the webhooks use cases need: the service's own store (PostgreSQL: store/webhooks-store.ts), the
 * HTTP side of endpoints (adapters/http.ts) and the clock. Use cases see only these; the unit tests put
 * in-memory fakes behind them (usecases/fakes.ts).
 */
import type { Tenant } from "@treasury/contracts";
import type { NewEvent } from "@treasury/service-kit";
import type { DeliveryRow, DeliveryStatus, EndpointRow, EndpointSecrets, SealedSecrets } from "../domain/records.ts";

export interface NewEndpoint {
  id: string;
  url: string;
  description: string | null;
  events: string[];
  sealed: SealedSecrets;
}

/** What `update` changes; an absent field stays as it is. */
export interface EndpointPatch {
  url?: string;
  description?: string | null;
  events?: string[];
  is_active?: boolean;
}

export interface DeliveryFilter {
  endpointId?: string;
  eventType?: string;
  status?: DeliveryStatus;
  limit: number;
}

/** A sandbox test event sent under an idempotency key (its replays answer it). */
export interface TestEventRecord {
  event_id: string;
  event_type: string;
  deliveries_queued: number;
}

/** The statements a use case runs in ONE transaction (WebhooksStore.transaction): all of them commit, or none. */
export interface WebhooksTx {
  /** Serialises endpoint creates of one org and environment until the transaction ends (the count check holds). */
  lockEndpointCreates(tenant: Tenant): Promise<void>;
  /** Endpoints not deleted. */
  countEndpoints(tenant: Tenant): Promise<number>;
  insertEndpoint(tenant: Tenant, endpoint: NewEndpoint): Promise<EndpointRow>;
  /** With `forUpdate`, the row stays locked until the transaction ends. */
  findEndpoint(tenant: Tenant, id: string, opts?: { forUpdate?: boolean }): Promise<EndpointRow | undefined>;
  /** Stores a rotation: the new secret and the one it replaces, which signs beside it for `overlapMs`. */
  rotateSecret(tenant: Tenant, id: string, sealed: SealedSecrets, overlapMs: number): Promise<EndpointRow | undefined>;
  /** Endpoints (deleted ones too) with clear secrets or sealed with a retired key, locked; rows locked elsewhere are skipped. */
  lockUnsealed(retiredKeyIds: readonly string[], limit: number): Promise<EndpointSecrets[]>;
  /** Stores an endpoint's secrets sealed and clears the clear columns. */
  storeSealed(id: string, sealed: SealedSecrets): Promise<void>;
  findDelivery(tenant: Tenant, id: string, opts?: { forUpdate?: boolean }): Promise<DeliveryRow | undefined>;
  /** A finished (or waiting) delivery due now for `extraAttempts` more attempts, same id and body; the workers are woken at commit. */
  makeDueNow(tenant: Tenant, id: string, extraAttempts: number): Promise<DeliveryRow | undefined>;
  /** Every failed delivery of an endpoint created since `since` (at most `limitMax`), due again now; their ids. */
  replayFailedSince(tenant: Tenant, endpointId: string, since: Date, limitMax: number): Promise<string[]>;
  /** Active endpoints whose filter takes `type`. */
  matchingEndpointIds(tenant: Tenant, type: string): Promise<string[]>;
  findTestEvent(tenant: Tenant, idempotencyKey: string): Promise<TestEventRecord | undefined>;
  /** Records a keyed test event; a concurrent duplicate fails the transaction on the key. */
  recordTestEvent(tenant: Tenant, idempotencyKey: string, event: TestEventRecord): Promise<void>;
  /** Writes an event to the webhooks outbox: it is published if and only if the transaction commits. */
  emit(event: NewEvent): Promise<void>;
}

/** The webhooks service's own state. */
export interface WebhooksStore {
  transaction<T>(fn: (tx: WebhooksTx) => Promise<T>): Promise<T>;
  /** Newest first, at most `limitMax`. */
  listEndpoints(tenant: Tenant, limitMax: number): Promise<EndpointRow[]>;
  findEndpoint(tenant: Tenant, id: string): Promise<EndpointRow | undefined>;
  updateEndpoint(tenant: Tenant, id: string, patch: EndpointPatch): Promise<EndpointRow | undefined>;
  /** False when there was no such endpoint (or it was deleted already). */
  softDeleteEndpoint(tenant: Tenant, id: string): Promise<boolean>;
  /** Newest first. */
  listDeliveries(tenant: Tenant, filter: DeliveryFilter): Promise<DeliveryRow[]>;
}

/** One event's delivery rows, written in the fan-out consumer's transaction. */
export interface FanOutStore {
  /**
   * One delivery per matching active endpoint of the tenant; a redelivered event inserts nothing new. Answers how
   * many rows were inserted.
   */
  insertDeliveries(
    tenant: Tenant,
    event: { id: string; type: string; body: string; traceHeaders: Record<string, string> },
    maxAttempts: number,
  ): Promise<number>;
}

/**
 * Where one attempt goes: `guarded` holds it to https and public addresses (live, and sandbox unless the deployment
 * allows private URLs).
 */
export interface AttemptTarget {
  url: string;
  guarded: boolean;
}

export interface AttemptResult {
  status: number | null;
  body: string | null;
  timeMs: number;
  error: string | null;
  /** The address was refused before any connection (or by the guarded lookup). */
  blocked: boolean;
}

/** The network as endpoint management sees it. */
export interface WebhookHttp {
  /** How a host resolves: only to public addresses, to one a webhook may not reach, or not at all. */
  resolveHost(hostname: string): Promise<"public" | "blocked" | "unresolved">;
  /** One POST, never retried; never throws (a failure is an AttemptResult with `error`). */
  postOnce(target: AttemptTarget, headers: Record<string, string>, body: string, timeoutMs: number): Promise<AttemptResult>;
}
