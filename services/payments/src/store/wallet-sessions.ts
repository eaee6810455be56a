/** SQL of hosted wallet page sessions. */
import type postgres from "postgres";
import type { Scope } from "../adapters/ledger.ts";
import type { Q } from "./db.ts";

export type WalletPermission = "view_balance" | "list_activity" | "top_up" | "request_refund";

export interface WalletSessionRow {
  id: string;
  org_id: string;
  livemode: boolean;
  wallet_id: string;
  wallet_type: "consumer_credit" | "creator_earnings";
  owner_id: string | null;
  owner_type: string | null;
  external_user_id: string | null;
  customer_email: string | null;
  permissions: WalletPermission[];
  status: "active" | "revoked";
  success_url: string | null;
  cancel_url: string | null;
  metadata: Record<string, unknown>;
  idempotency_key: string | null;
  request_hash: string;
  create_response: Record<string, unknown> | null;
  expires_at: Date;
  created_at: Date;
}

export type NewWalletSession = Omit<WalletSessionRow, "status" | "create_response" | "created_at">;

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

export async function findWalletSessionByKey(q: Q, s: Scope, key: string): Promise<WalletSessionRow | undefined> {
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
