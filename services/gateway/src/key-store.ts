/** The API keys, org statuses and maintenance switch in PostgreSQL, as the authenticator's KeyStore. */
import type postgres from "postgres";
import type { Scope } from "@treasury/contracts";
import { AUTH_CHANGED_CHANNEL, getMaintenance } from "./admin.ts";
import type { KeyRecord, KeyStore } from "./auth.ts";

interface KeyRow {
  id: string;
  org_id: string;
  livemode: boolean;
  scopes: string[] | null;
  status: string;
  expires_at: Date | null;
  revoked_at: Date | null;
  rate_limits: KeyRecord["rateOverrides"];
}

function toRecord(row: KeyRow): KeyRecord {
  return {
    keyId: row.id,
    orgId: row.org_id,
    livemode: row.livemode,
    scopes: row.scopes as Scope[] | null,
    orgStatus: row.status,
    expiresAt: row.expires_at ? row.expires_at.getTime() : null,
    revoked: row.revoked_at !== null,
    rateOverrides: row.rate_limits ?? {},
  };
}

export function pgKeyStore(sql: postgres.Sql): KeyStore {
  return {
    async findKey(hash) {
      const rows = await sql<KeyRow[]>`select k.id, k.org_id, k.livemode, k.scopes, o.status, k.expires_at, k.revoked_at, o.rate_limits
          from gateway.api_keys k join gateway.orgs o on o.id = k.org_id
         where k.key_hash = ${hash}`;
      const row = rows[0];
      return row ? toRecord(row) : null;
    },
    maintenance: () => getMaintenance(sql),
    async watch(changed) {
      const sub = await sql.listen(AUTH_CHANGED_CHANNEL, changed, changed);
      return () => sub.unlisten();
    },
  };
}
