/**
 * In-memory fakes behind the use cases' ports (ports.ts), for the unit tests only: the store keeps endpoints and
 * deliveries in maps with the SQL's tenant and deletion rules (a transaction that throws leaves nothing behind),
 * the network answers what a test tells it, and every call is recorded.
 */
import type { Tenant } from "@treasury/contracts";
import { generateKeyRingEntry, parseKeyRing, Sealer } from "@treasury/service-kit";
import { pino } from "pino";
import type { WebhooksConfig } from "../config.ts";
import type { DeliveryRow, EndpointRow } from "../domain/records.ts";
import type { Deps } from "./deps.ts";
import { SigningKeys } from "./signing-keys.ts";
import type {
  AttemptResult,
  AttemptTarget,
  DeliveryFilter,
  EndpointPatch,
  FanOutStore,
  NewEndpoint,
  NewSigningKey,
  SigningKeyRow,
  SigningKeyStore,
  SigningKeyTx,
  TestEventRecord,
  WebhookHttp,
  WebhooksStore,
  WebhooksTx,
} from "./ports.ts";

const mine = (row: { org_id: string; livemode: boolean }, t: Tenant): boolean => row.org_id === t.orgId && row.livemode === t.livemode;

interface Stored extends EndpointRow {
  deleted: boolean;
}

export class FakeWebhooksStore implements WebhooksStore {
  endpoints = new Map<string, Stored>();
  deliveries = new Map<string, DeliveryRow>();
  testEvents = new Map<string, TestEventRecord>();
  events: Array<{ type: string; org_id: string; livemode: boolean; data: Record<string, unknown> }> = [];
  /** Tenants whose creates were serialised (lockEndpointCreates), in order. */
  createLocks: Tenant[] = [];

  constructor(private readonly now: () => Date) {}

  private readonly tx: WebhooksTx = {
    lockEndpointCreates: async (tenant) => void this.createLocks.push(tenant),
    countEndpoints: async (tenant) => [...this.endpoints.values()].filter((e) => mine(e, tenant) && !e.deleted).length,
    insertEndpoint: async (tenant, e) => this.insert(tenant, e),
    findEndpoint: (tenant, id) => this.findEndpoint(tenant, id),
    rotateSecret: async (tenant, id, sealed, overlapMs) => {
      const now = this.now();
      return this.patchEndpoint(tenant, id, {
        ...sealed,
        secret: null,
        previous_secret: null,
        previous_secret_expires_at: new Date(now.getTime() + overlapMs),
        secret_rotated_at: now,
      });
    },
    lockUnsealed: async (retired, limit) =>
      [...this.endpoints.values()]
        .filter((e) => e.secret !== null || e.previous_secret !== null || (e.secret_key_id !== null && retired.includes(e.secret_key_id)))
        .slice(0, limit),
    storeSealed: async (id, sealed) => {
      const e = this.endpoints.get(id);
      if (e !== undefined) this.endpoints.set(id, { ...e, ...sealed, secret: null, previous_secret: null });
    },
    findDelivery: async (tenant, id) => {
      const d = this.deliveries.get(id);
      return d !== undefined && mine(d, tenant) ? d : undefined;
    },
    makeDueNow: async (tenant, id, extra) => {
      const d = this.deliveries.get(id);
      if (d === undefined || !mine(d, tenant)) return undefined;
      const status = d.status === "delivered" || d.status === "failed" ? "retrying" : d.status;
      const next = { ...d, status, max_attempts: Math.max(d.max_attempts, d.attempts + extra), next_retry_at: this.now() };
      this.deliveries.set(id, next);
      return next;
    },
    replayFailedSince: async (tenant, endpointId, since, limitMax) => {
      const failed = [...this.deliveries.values()].filter(
        (d) => mine(d, tenant) && d.endpoint_id === endpointId && d.status === "failed" && d.created_at >= since,
      );
      for (const d of failed.slice(0, limitMax))
        this.deliveries.set(d.id, { ...d, status: "retrying", max_attempts: d.attempts + 1, next_retry_at: this.now() });
      return failed.slice(0, limitMax).map((d) => d.id);
    },
    matchingEndpointIds: async (tenant, type) =>
      [...this.endpoints.values()]
        .filter((e) => mine(e, tenant) && e.is_active && !e.deleted && (e.events.includes("*") || e.events.includes(type)))
        .map((e) => e.id),
    findTestEvent: async (tenant, key) => this.testEvents.get(`${tenant.orgId}:${tenant.livemode}:${key}`),
    recordTestEvent: async (tenant, key, e) => void this.testEvents.set(`${tenant.orgId}:${tenant.livemode}:${key}`, e),
    emit: async (e) => void this.events.push({ type: e.type, org_id: e.org_id, livemode: e.livemode, data: e.data }),
  };

  async transaction<T>(fn: (tx: WebhooksTx) => Promise<T>): Promise<T> {
    const saved = { endpoints: new Map(this.endpoints), deliveries: new Map(this.deliveries), testEvents: new Map(this.testEvents), events: [...this.events] };
    try {
      return await fn(this.tx);
    } catch (e) {
      Object.assign(this, saved);
      throw e;
    }
  }

  async listEndpoints(tenant: Tenant, limitMax: number): Promise<EndpointRow[]> {
    return [...this.endpoints.values()]
      .filter((e) => mine(e, tenant) && !e.deleted)
      .reverse()
      .slice(0, limitMax);
  }

  async findEndpoint(tenant: Tenant, id: string): Promise<EndpointRow | undefined> {
    const e = this.endpoints.get(id);
    return e !== undefined && mine(e, tenant) && !e.deleted ? e : undefined;
  }

  async updateEndpoint(tenant: Tenant, id: string, patch: EndpointPatch): Promise<EndpointRow | undefined> {
    return this.patchEndpoint(tenant, id, patch);
  }

  async softDeleteEndpoint(tenant: Tenant, id: string): Promise<boolean> {
    return (await this.patchEndpoint(tenant, id, { deleted: true, is_active: false })) !== undefined;
  }

  async listDeliveries(tenant: Tenant, f: DeliveryFilter): Promise<DeliveryRow[]> {
    return [...this.deliveries.values()]
      .filter((d) => mine(d, tenant) && (f.endpointId === undefined || d.endpoint_id === f.endpointId) && (f.status === undefined || d.status === f.status))
      .slice(0, f.limit);
  }

  /** A stored endpoint as the test sees it (undefined when absent). */
  endpoint(id: string): Stored | undefined {
    return this.endpoints.get(id);
  }

  private insert(tenant: Tenant, e: NewEndpoint): EndpointRow {
    const row: Stored = {
      id: e.id,
      org_id: tenant.orgId,
      livemode: tenant.livemode,
      url: e.url,
      description: e.description,
      events: e.events,
      is_active: true,
      signature_scheme: e.signature_scheme,
      ordering: e.ordering,
      secret: null,
      previous_secret: null,
      secret_sealed: e.sealed.secret_sealed,
      previous_secret_sealed: e.sealed.previous_secret_sealed,
      secret_key_id: e.sealed.secret_key_id,
      previous_secret_expires_at: null,
      secret_rotated_at: null,
      created_at: this.now(),
      deleted: false,
    };
    this.endpoints.set(row.id, row);
    return row;
  }

  private async patchEndpoint(tenant: Tenant, id: string, patch: Partial<Stored>): Promise<EndpointRow | undefined> {
    const e = await this.findEndpoint(tenant, id);
    if (e === undefined) return undefined;
    const defined = Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined));
    const next = { ...(e as Stored), ...defined };
    this.endpoints.set(id, next);
    return next;
  }
}

/** The network: hosts resolve as `hosts` says (public otherwise); POSTs are recorded and answered with `answer`. */
export class FakeHttp implements WebhookHttp {
  hosts = new Map<string, "public" | "blocked" | "unresolved">();
  posts: Array<{ target: AttemptTarget; headers: Record<string, string>; body: string }> = [];
  answer: AttemptResult = { status: 204, body: "", timeMs: 3, error: null, blocked: false };

  async resolveHost(hostname: string): Promise<"public" | "blocked" | "unresolved"> {
    return this.hosts.get(hostname) ?? "public";
  }

  async postOnce(target: AttemptTarget, headers: Record<string, string>, body: string): Promise<AttemptResult> {
    this.posts.push({ target, headers, body });
    return this.answer;
  }
}

/** The fan-out's delivery rows: how many each event would create, and the events it was asked to store. */
export class FakeFanOutStore implements FanOutStore {
  inserted: Array<{ tenant: Tenant; id: string; type: string }> = [];
  constructor(private readonly matching = 1) {}

  async insertDeliveries(tenant: Tenant, event: { id: string; type: string }): Promise<{ inserted: number; ordered: number }> {
    this.inserted.push({ tenant, id: event.id, type: event.type });
    return { inserted: this.matching, ordered: 0 };
  }
}

export const TEST_CONFIG: WebhooksConfig = {
  retryScheduleMs: [0, 50, 100],
  timeoutMs: 1_000,
  pollIntervalMs: 50,
  concurrencyMax: 4,
  endpointConcurrencyMax: 2,
  rotationOverlapMs: 86_400_000,
  signingKeyOverlapMs: 7 * 86_400_000,
  fanoutConsumers: 1,
  retentionDays: 30,
  allowPrivateUrls: false,
};

/** A sealer over a fresh one-key ring (key id `k1` unless told). */
export function testSealer(kid = "k1"): Sealer {
  return new Sealer(parseKeyRing(generateKeyRingEntry(kid)));
}

/** The platform's signing keys in memory, with the SQL's rules for retiring and expiring them. */
export class FakeSigningKeyStore implements SigningKeyStore {
  rows = new Map<string, SigningKeyRow>();
  constructor(private readonly now: () => Date) {}

  private readonly tx: SigningKeyTx = {
    lock: async () => {},
    active: async () => [...this.rows.values()].find((r) => r.status === "active"),
    retireActive: async (overlapMs) => {
      const now = this.now();
      const end = new Date(now.getTime() + overlapMs);
      for (const r of this.rows.values()) {
        if (r.status === "expired") continue;
        const expires_at = r.expires_at !== null && r.expires_at < end ? r.expires_at : end;
        this.rows.set(r.kid, { ...r, status: "retiring", retired_at: r.retired_at ?? now, expires_at });
      }
      await this.expire();
      return [...this.rows.values()].filter((r) => r.status === "retiring").map((r) => ({ kid: r.kid, expires_at: r.expires_at as Date }));
    },
    insertActive: async (k: NewSigningKey) => {
      const row: SigningKeyRow = {
        kid: k.kid,
        public_jwk: k.publicJwk,
        sealed_private_key: k.sealed,
        sealing_key_id: k.sealingKeyId,
        status: "active",
        created_at: this.now(),
        retired_at: null,
        expires_at: null,
      };
      this.rows.set(k.kid, row);
      return row;
    },
  };

  transaction<T>(fn: (tx: SigningKeyTx) => Promise<T>): Promise<T> {
    return fn(this.tx);
  }

  async current(): Promise<SigningKeyRow[]> {
    const now = this.now();
    const live = [...this.rows.values()].filter((r) => r.status === "active" || (r.status === "retiring" && r.expires_at !== null && r.expires_at > now));
    return live.sort((a, b) => Number(b.status === "active") - Number(a.status === "active"));
  }

  async expire(): Promise<string[]> {
    const now = this.now();
    const ended = [...this.rows.values()].filter((r) => r.status === "retiring" && r.expires_at !== null && r.expires_at <= now);
    for (const r of ended) this.rows.set(r.kid, { ...r, status: "expired", sealed_private_key: null, sealing_key_id: null });
    return ended.map((r) => r.kid);
  }

  async reseal(
    retired: readonly string[],
    limit: number,
    reseal: (row: SigningKeyRow) => { sealed: string; sealingKeyId: string } | undefined,
  ): Promise<number> {
    let moved = 0;
    for (const r of [...this.rows.values()].filter((x) => x.sealing_key_id !== null && retired.includes(x.sealing_key_id)).slice(0, limit)) {
      const next = reseal(r);
      if (next === undefined) continue;
      this.rows.set(r.kid, { ...r, sealed_private_key: next.sealed, sealing_key_id: next.sealingKeyId });
      moved += 1;
    }
    return moved;
  }
}

export type FakeDeps = Deps & { store: FakeWebhooksStore; http: FakeHttp; keyStore: FakeSigningKeyStore };

/** Use-case deps over fresh fakes, with a clock that moves one second per reading. */
export function fakeDeps(opts: { sealer?: Sealer | undefined; config?: Partial<WebhooksConfig> } = {}): FakeDeps {
  let tick = Date.parse("2026-01-01T00:00:00Z");
  const now = (): Date => new Date((tick += 1000));
  const sealer = "sealer" in opts ? opts.sealer : testSealer();
  const log = pino({ level: "silent" });
  const keyStore = new FakeSigningKeyStore(now);
  return {
    store: new FakeWebhooksStore(now),
    http: new FakeHttp(),
    sealer,
    keyStore,
    signingKeys: new SigningKeys(keyStore, sealer, log, () => now().getTime()),
    config: { ...TEST_CONFIG, ...opts.config },
    log,
    now,
  };
}
