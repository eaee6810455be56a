/** SQL of hosted wallet page sessions. */
import type postgres from "postgres";
import type { Tenant } from "@treasury/contracts";
import type { NewWalletSession, WalletSessionRow } from "../domain/records.ts";
import type { WalletSessionStore } from "../usecases/ports.ts";
import type { Q, Sql } from "./db.ts";

export async function insertWalletSession(q: Q, w: NewWalletSession): Promise<WalletSessionRow | undefined> {
  const [row] = await q<WalletSessionRow[]>`
    insert into payments.wallet_sessions (id, org_id, livemode, wallet_id, wallet_type, owner_id, owner_type, external_user_id, customer_email,
      permissions, status, success_url, cancel_url, metadata, idempotency_key, request_hash, expires_at)
    values (${w.id}, ${w.org_id}, ${w.livemode}, ${w.wallet_id}, ${w.wallet_type}, ${w.owner_id}, ${w.owner_type}, ${w.external_user_id},
      ${w.customer_email}, ${w.permissions}, 'active', ${w.success_url}, ${w.cancel_url}, ${q.json(w.metadata as postgres.JSONValue)},
      ${w.idempotency_key}, ${w.request_hash}, ${w.expires_at})
    on conflict (org_id, livemode, idempotency_key) where idempotency_key is not null do nothing
    returning *`;
  return row;
}

export async function findWalletSessionByKey(q: Q, s: Tenant, key: string): Promise<WalletSessionRow | undefined> {
  const [row] = await q<WalletSessionRow[]>`
    select * from payments.wallet_sessions where org_id = ${s.orgId} and livemode = ${s.livemode} and idempotency_key = ${key}`;
  return row;
}

/** Hosted page: the unguessable session id alone authorises. */
export async function findWalletSessionForPage(q: Q, id: string): Promise<WalletSessionRow | undefined> {
  const [row] = await q<WalletSessionRow[]>`select * from payments.wallet_sessions where id = ${id}`;
  return row;
}

export async function storeWalletSessionResponse(q: Q, id: string, response: Record<string, unknown>): Promise<void> {
  await q`update payments.wallet_sessions set create_response = ${q.json(response as postgres.JSONValue)} where id = ${id} and create_response is null`;
}

export function pgWalletSessionStore(sql: Sql): WalletSessionStore {
  return {
    insert: (w) => insertWalletSession(sql, w),
    findByKey: (tenant, key) => findWalletSessionByKey(sql, tenant, key),
    findForPage: (id) => findWalletSessionForPage(sql, id),
    storeResponse: (id, response) => storeWalletSessionResponse(sql, id, response),
  };
}
