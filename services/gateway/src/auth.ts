/**
 * API-key authentication: hash the presented key, look it up (through a short-lived cache that a NOTIFY from
 * the admin actions clears at once), and turn it into an auth context or a precise failure.
 */
import { environmentOfKey, type Environment, type RateClass, type Scope } from "@treasury/contracts";
import { hashApiKey, type MaintenanceSetting } from "./admin.ts";

export interface KeyRecord {
  keyId: string;
  orgId: string;
  livemode: boolean;
  scopes: Scope[] | null;
  orgStatus: string;
  expiresAt: number | null;
  revoked: boolean;
  rateOverrides: Partial<Record<RateClass, { capacity: number; refill_per_sec: number }>>;
}

/** What authentication needs from storage; key-store.ts implements it on PostgreSQL, tests count or fake it. */
export interface KeyStore {
  /** The key stored under this SHA-256 hash, with its org's status and limits; null when there is none. */
  findKey(hash: string): Promise<KeyRecord | null>;
  maintenance(): Promise<MaintenanceSetting>;
  /** Calls `changed` on every admin change and on every (re)subscription; resolves to the unsubscribe. */
  watch(changed: () => void): Promise<() => Promise<void>>;
}

export type AuthResult = { ok: true; key: KeyRecord } | { ok: false; code: "missing_api_key" | "invalid_api_key" | "ledger_suspended" };

const CACHE_ENTRIES_MAX = 50_000;

function verdict(record: KeyRecord | null, environment: Environment, now: number): AuthResult {
  // A key whose prefix names another environment than the one it was issued for is invalid.
  if (!record || record.revoked || (record.expiresAt !== null && record.expiresAt <= now) || record.livemode !== (environment === "live")) {
    return { ok: false, code: "invalid_api_key" };
  }
  if (record.orgStatus !== "active") return { ok: false, code: "ledger_suspended" };
  return { ok: true, key: record };
}

export class Authenticator {
  private readonly cache = new Map<string, { record: KeyRecord | null; until: number }>();
  /** Reads under way, by key hash: the requests that need a key while it is being read share that one query. */
  private readonly reads = new Map<string, Promise<KeyRecord | null>>();
  /** Bumped by every clear: a read that started before an admin change must not put its answer in the cache. */
  private generation = 0;
  /**
   * Presented key → its SHA-256, for keys that were looked up: hashing was the costliest step of a cached
   * lookup. Cleared with the cache (on every admin change and when full). The process reads every presented
   * key anyway; this keeps recent ones a little longer, never outside the process.
   */
  private readonly hashes = new Map<string, string>();
  private unlisten: (() => Promise<void>) | undefined;

  constructor(
    private readonly store: KeyStore,
    private readonly cacheTtlMs: number,
  ) {}

  private maintenanceSetting: MaintenanceSetting = { enabled: false, retry_after_s: 0, message: "" };

  /** Subscribe to admin changes so revocations, suspensions and maintenance apply immediately, not after the TTL. */
  async start(): Promise<void> {
    const changed = () => {
      this.clear();
      void this.loadMaintenance();
    };
    // Also on every (re)subscription: changes made while the connection was down sent no notification.
    this.unlisten = await this.store.watch(changed);
    await this.loadMaintenance();
  }

  /** The operator's maintenance switch, as last read (reloaded on every admin NOTIFY and on reconnect). */
  maintenance(): MaintenanceSetting {
    return this.maintenanceSetting;
  }

  private async loadMaintenance(): Promise<void> {
    try {
      this.maintenanceSetting = await this.store.maintenance();
    } catch {
      // Keep the last known setting: a failed read must not flip the gateway in or out of maintenance.
    }
  }

  async stop(): Promise<void> {
    await this.unlisten?.();
  }

  /** The answer when it needs no database read (no key, a malformed one, or one in the cache), else undefined. */
  answerWithoutRead(presented: string | undefined, now = Date.now()): AuthResult | undefined {
    const r = this.authenticate(presented, now, false);
    return r instanceof Promise ? undefined : r;
  }

  /**
   * The answer of a read of this key already in flight, else undefined: requests that arrive together with one key
   * the cache does not hold (a burst after the gateway started, or after the key sat unused) share one read.
   */
  readInFlight(presented: string | undefined, now = Date.now()): Promise<AuthResult> | undefined {
    if (presented === undefined || presented === "") return undefined;
    const environment = environmentOfKey(presented);
    if (environment === null) return undefined;
    const running = this.reads.get(this.hashes.get(presented) ?? hashApiKey(presented));
    return running?.then((record) => verdict(record, environment, now));
  }

  /** Answers synchronously when the key is cached (the hot path), with a promise when it must be read. */
  authenticate(presented: string | undefined, now = Date.now(), read = true): AuthResult | Promise<AuthResult> {
    if (presented === undefined || presented === "") return { ok: false, code: "missing_api_key" };
    const environment = environmentOfKey(presented);
    if (environment === null) return { ok: false, code: "invalid_api_key" };
    const known = this.hashes.get(presented);
    const hash = known ?? hashApiKey(presented);
    const hit = this.cache.get(hash);
    if (hit !== undefined) {
      if (hit.until > now) return verdict(hit.record, environment, now);
      // A valid key whose entry expired less than a TTL ago: answer from it while one read refreshes it.
      // Otherwise every TTL the key's requests would wait for the database, and each one arriving meanwhile would
      // read it again. Admin changes do not wait for this: they clear the cache at once. A failed refresh is
      // retried by the next request; past the grace period requests wait for the read (and see its failure).
      // A key that did not authenticate gets no grace: reading it again goes through the caller's failed-auth
      // budget (auth-failures.ts), so a replayed bad key costs no refresh past that budget.
      const stale = verdict(hit.record, environment, now);
      if (stale.ok && hit.until + this.cacheTtlMs > now) {
        this.read(hash, now).catch(() => {});
        return stale;
      }
    }
    if (!read) return Promise.resolve({ ok: false, code: "invalid_api_key" });
    return this.read(hash, now).then((record) => {
      if (this.hashes.size >= CACHE_ENTRIES_MAX) this.hashes.clear();
      this.hashes.set(presented, hash);
      return verdict(record, environment, now);
    });
  }

  private clear(): void {
    this.cache.clear();
    this.hashes.clear();
    this.reads.clear();
    this.generation += 1;
  }

  /** One database read per key at a time; its answer is cached unless an admin change cleared the cache meanwhile. */
  private read(hash: string, now: number): Promise<KeyRecord | null> {
    const running = this.reads.get(hash);
    if (running !== undefined) return running;
    const generation = this.generation;
    const read = this.store.findKey(hash).then(
      (record) => {
        if (this.reads.get(hash) === read) this.reads.delete(hash);
        if (generation === this.generation) {
          if (this.cache.size >= CACHE_ENTRIES_MAX) {
            this.cache.clear();
            this.hashes.clear();
          }
          this.cache.set(hash, { record, until: now + this.cacheTtlMs });
        }
        return record;
      },
      (err: unknown) => {
        if (this.reads.get(hash) === read) this.reads.delete(hash);
        throw err;
      },
    );
    this.reads.set(hash, read);
    return read;
  }
}
