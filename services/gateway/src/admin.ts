/**
 * Operator actions on organisations and API keys (the gateway's operator commands, src/admin/commands.ts, and the
 * dev stack use these; they are not part of the public API). Every change NOTIFYs the gateways so their auth caches
 * drop stale entries at once.
 */
import { hash, randomBytes } from "node:crypto";
import type postgres from "postgres";
import { DomainError, newId, type Scope, SCOPES } from "@treasury/contracts";

type Sql = postgres.Sql | postgres.TransactionSql;

export const AUTH_CHANGED_CHANNEL = "gateway_auth_changed";
const KEY_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const KEY_RANDOM_LENGTH = 32;

export function hashApiKey(key: string): string {
  return hash("sha256", key, "hex");
}

/** `slk_test_` / `slk_live_` + 32 characters of [A-Za-z0-9] (rejection sampling keeps it unbiased). */
export function generateApiKey(environment: "sandbox" | "live"): string {
  let out = "";
  while (out.length < KEY_RANDOM_LENGTH) {
    for (const b of randomBytes(48)) {
      if (b < 248 && out.length < KEY_RANDOM_LENGTH) out += KEY_ALPHABET[b % 62];
    }
  }
  return `slk_${environment === "live" ? "live" : "test"}_${out}`;
}

/** An id the operator gave that names nothing: a bad flag, answered with its message. */
function orgNotFound(orgId: string): DomainError {
  return new DomainError("validation_error", `org not found: ${orgId}`);
}

export async function createOrg(sql: Sql, opts: { name: string }): Promise<{ org_id: string }> {
  const id = newId("org");
  await sql`insert into gateway.orgs (id, name) values (${id}, ${opts.name})`;
  return { org_id: id };
}

export async function setOrgStatus(sql: Sql, orgId: string, status: "active" | "suspended" | "inactive" | "canceled"): Promise<void> {
  const rows = await sql`update gateway.orgs set status = ${status}, updated_at = now() where id = ${orgId} returning id`;
  if (rows.length === 0) throw orgNotFound(orgId);
  await sql`select pg_notify(${AUTH_CHANGED_CHANNEL}, ${orgId})`;
}

/**
 * Whether an org's business verifications (KYB) allow a live key. KYB is kept per environment. An organisation
 * has only test keys until its first approval, so an approved sandbox verification unlocks live keys; a live
 * verification an operator rejected or suspended stops them whatever the sandbox says.
 */
export function kybAllowsLiveKeys(verifications: readonly { livemode: boolean; status: string }[]): boolean {
  if (verifications.some((v) => v.livemode && (v.status === "rejected" || v.status === "suspended"))) return false;
  return verifications.some((v) => v.status === "approved");
}

/** The KYC service's records read directly: only a connection that may read its schema (the admin one) can. */
async function kybApprovedInDatabase(sql: Sql, orgId: string): Promise<boolean> {
  const [t] = await sql<{ t: string | null }[]>`select to_regclass('kyc.business_verifications')::text as t`;
  if (!t?.t) return false;
  const rows = await sql<{ livemode: boolean; status: string }[]>`select livemode, status from kyc.business_verifications where org_id = ${orgId}`;
  return kybAllowsLiveKeys(rows);
}

export function parseScopes(list: string | undefined): Scope[] | null {
  if (list === undefined || list.trim() === "") return null;
  const scopes = list
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  for (const s of scopes) {
    if (!(SCOPES as readonly string[]).includes(s)) throw new DomainError("validation_error", `unknown scope "${s}" (valid: ${SCOPES.join(", ")})`);
  }
  return scopes as Scope[];
}

export interface NewApiKey {
  orgId: string;
  environment: "sandbox" | "live";
  scopes: Scope[] | null;
  forceUnverified?: boolean;
  expiresAt?: Date;
  /** Whether the org's KYB allows a live key, asked of the KYC service; without it its schema is read through `sql`. */
  kybApproved?: () => Promise<boolean>;
}

export async function createApiKey(sql: Sql, opts: NewApiKey): Promise<{ api_key: string; key_id: string }> {
  const [org] = await sql`select id from gateway.orgs where id = ${opts.orgId}`;
  if (!org) throw orgNotFound(opts.orgId);
  const kybApproved = opts.kybApproved ?? (() => kybApprovedInDatabase(sql, opts.orgId));
  if (opts.environment === "live" && !opts.forceUnverified && !(await kybApproved())) {
    throw new DomainError("kyb_not_approved", "A live key needs an approved business verification (KYB); use --force-unverified for development");
  }
  const key = generateApiKey(opts.environment);
  const id = newId("key");
  await sql`
    insert into gateway.api_keys (id, org_id, livemode, key_hash, display_prefix, scopes, expires_at)
    values (${id}, ${opts.orgId}, ${opts.environment === "live"}, ${hashApiKey(key)}, ${key.slice(0, 13)},
            ${opts.scopes === null ? null : sql.array(opts.scopes)}, ${opts.expiresAt ?? null})`;
  await sql`select pg_notify(${AUTH_CHANGED_CHANNEL}, ${opts.orgId})`;
  return { api_key: key, key_id: id };
}

export async function revokeApiKey(sql: Sql, keyId: string): Promise<void> {
  const rows = await sql`update gateway.api_keys set revoked_at = coalesce(revoked_at, now()) where id = ${keyId} returning org_id`;
  if (rows.length === 0) throw new DomainError("validation_error", `key not found: ${keyId}`);
  await sql`select pg_notify(${AUTH_CHANGED_CHANNEL}, ${String(rows[0]?.org_id)})`;
}

export interface MaintenanceSetting {
  enabled: boolean;
  retry_after_s: number;
  message: string;
}

/** Maintenance mode: every API operation answers 503 `maintenance` with `retry_after` until it is turned off. */
export async function setMaintenance(sql: Sql, setting: MaintenanceSetting): Promise<void> {
  await sql`
    insert into gateway.settings (key, value) values ('maintenance', ${sql.json(setting as unknown as postgres.JSONValue)})
    on conflict (key) do update set value = excluded.value, updated_at = now()`;
  await sql`select pg_notify(${AUTH_CHANGED_CHANNEL}, 'maintenance')`;
}

export async function getMaintenance(sql: Sql): Promise<MaintenanceSetting> {
  const [row] = await sql<{ value: MaintenanceSetting }[]>`select value from gateway.settings where key = 'maintenance'`;
  return row?.value ?? { enabled: false, retry_after_s: 0, message: "" };
}
