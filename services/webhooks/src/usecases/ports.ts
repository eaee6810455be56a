/**
 * Every port the webhooks use cases need: the service's own store (PostgreSQL: store/webhooks-store.ts), the
 * HTTP side of endpoints (adapters/http.ts) and the clock. Use cases see only these; the unit tests put
 * in-memory fakes behind them (usecases/fakes.ts).
 */
import type { Tenant } from "@treasury/contracts";
import type { NewEvent } from "@treasury/service-kit";
import type { PublicJwk } from "../domain/jwk.ts";
import type { DeliveryRow, DeliveryStatus, EndpointRow, EndpointSecrets, Ordering, SealedSecrets } from "../domain/records.ts";
import type { SignatureScheme } from "../domain/signing.ts";

export interface NewEndpoint {
  id: string;
  url: string;
  description: string | null;
  events: string[];
  signature_scheme: SignatureScheme;
  ordering: Ordering;
  sealed: SealedSecrets;
}

/** What `update` changes; an absent field stays as it is. */
export interface EndpointPatch {
  url?: string;
  description?: string | null;
  events?: string[];
  is_active?: boolean;
  signature_scheme?: SignatureScheme;
  ordering?: Ordering;
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

/** An event as the fan-out writes it: its body around each endpoint's id (webhookBodyParts) and its stream sequence. */
export interface FanOutEvent {
  id: string;
  type: string;
  body: { before: string; after: string };
  traceHeaders: Record<string, string>;
  streamSeq: number;
}

/** Rows an event's fan-out inserted, and how many of them are for ordered endpoints. */
export interface FanOutCount {
  inserted: number;
  ordered: number;
}

/** One event's delivery rows, written in the fan-out consumer's transaction. */
export interface FanOutStore {
  /**
   * One delivery per matching active endpoint of the tenant; a redelivered event inserts nothing new. Answers how
   * many rows were inserted.
   */
  insertDeliveries(tenant: Tenant, event: FanOutEvent, maxAttempts: number): Promise<FanOutCount>;
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

/** A platform Ed25519 signing key as stored: its public JWK, its private half sealed (null once expired). */
export interface SigningKeyRow {
  kid: string;
  public_jwk: PublicJwk;
  sealed_private_key: string | null;
  sealing_key_id: string | null;
  status: "active" | "retiring" | "expired";
  created_at: Date;
  retired_at: Date | null;
  expires_at: Date | null;
}

/** A new key, its private half already sealed. */
export interface NewSigningKey {
  kid: string;
  publicJwk: PublicJwk;
  sealed: string;
  sealingKeyId: string;
}

/** The statements of one key transaction (the first key, a rotation); its commit is the caller's. */
export interface SigningKeyTx {
  /** Serialises key changes until the transaction ends. */
  lock(): Promise<void>;
  active(): Promise<SigningKeyRow | undefined>;
  /**
   * The active key (and any key still retiring) stops being active and stays published for `overlapMs` (a key
   * already retiring keeps its end when that is sooner; 0 expires every previous key now). Answers the keys still
   * published with their ends.
   */
  retireActive(overlapMs: number): Promise<Array<{ kid: string; expires_at: Date }>>;
  insertActive(key: NewSigningKey): Promise<SigningKeyRow>;
}

export interface SigningKeyStore {
  transaction<T>(fn: (tx: SigningKeyTx) => Promise<T>): Promise<T>;
  /** The active key first, then the retiring keys whose overlap lasts: what signs and what is published. */
  current(): Promise<SigningKeyRow[]>;
  /** Retiring keys whose overlap ended are expired (unpublished, private half dropped); their kids. */
  expire(): Promise<string[]>;
  /**
   * Up to `limit` keys sealed with one of `retiredSealingKeyIds`, locked, each stored as `reseal` answers (undefined:
   * left as it is); answers how many moved.
   */
  reseal(
    retiredSealingKeyIds: readonly string[],
    limit: number,
    reseal: (row: SigningKeyRow) => { sealed: string; sealingKeyId: string } | undefined,
  ): Promise<number>;
}
