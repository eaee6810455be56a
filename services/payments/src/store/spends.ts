/** SQL of shared-wallet spends and the reversal audit log. */
import { parseCents } from "@treasury/contracts";
import type postgres from "postgres";
import type { Scope } from "../adapters/ledger.ts";
import type { Q } from "./db.ts";

export interface SpendRow {
  org_id: string;
  livemode: boolean;
  reference_id: string;
  transaction_id: string;
  consumer_sub: string;
  consumer_wallet_id: string;
  creator_id: string;
  amount: number;
  sales_tax: number;
  creator_amount: number;
  platform_amount: number;
  creator_bps: number;
  status: "settled" | "reversing" | "reversed";
  created_at: Date;
}

type RawSpend = Omit<SpendRow, "amount" | "sales_tax" | "creator_amount" | "platform_amount"> &
  Record<"amount" | "sales_tax" | "creator_amount" | "platform_amount", string>;

function parseSpend(r: RawSpend): SpendRow {
  return {
    ...r,
    amount: parseCents(r.amount),
    sales_tax: parseCents(r.sales_tax),
    creator_amount: parseCents(r.creator_amount),
    platform_amount: parseCents(r.platform_amount),
  };
}

export async function upsertSpend(
  q: Q,
  s: Scope,
  sp: Omit<SpendRow, "org_id" | "livemode" | "status" | "created_at"> & {
    product_id: string | null;
    product_name: string | null;
    metadata: Record<string, unknown>;
  },
): Promise<void> {
  await q`
    insert into payments.shared_spends (org_id, livemode, reference_id, transaction_id, consumer_sub, consumer_wallet_id, creator_id, amount,
      sales_tax, creator_amount, platform_amount, creator_bps, product_id, product_name, metadata, status)
    values (${s.orgId}, ${s.livemode}, ${sp.reference_id}, ${sp.transaction_id}, ${sp.consumer_sub}, ${sp.consumer_wallet_id}, ${sp.creator_id},
      ${sp.amount}, ${sp.sales_tax}, ${sp.creator_amount}, ${sp.platform_amount}, ${sp.creator_bps}, ${sp.product_id}, ${sp.product_name},
      ${q.json(sp.metadata as postgres.JSONValue)}, 'settled')
    on conflict do nothing`;
}

export async function findSpendByTransaction(q: Q, s: Scope, transactionId: string, lock = false): Promise<SpendRow | undefined> {
  const [r] = lock
    ? await q<
        RawSpend[]
      >`select * from payments.shared_spends where org_id = ${s.orgId} and livemode = ${s.livemode} and transaction_id = ${transactionId} for update`
    : await q<RawSpend[]>`select * from payments.shared_spends where org_id = ${s.orgId} and livemode = ${s.livemode} and transaction_id = ${transactionId}`;
  return r === undefined ? undefined : parseSpend(r);
}

export async function setSpendStatus(q: Q, s: Scope, transactionId: string, status: SpendRow["status"]): Promise<void> {
  await q`update payments.shared_spends set status = ${status} where org_id = ${s.orgId} and livemode = ${s.livemode} and transaction_id = ${transactionId}`;
}

export interface ReversalRow {
  org_id: string;
  livemode: boolean;
  sale_transaction_id: string;
  spend_reference_id: string;
  reason: string | null;
  reversal_transaction_id: string | null;
  status: "reversing" | "reversed";
  response: Record<string, unknown> | null;
}

export async function findReversal(q: Q, s: Scope, saleTransactionId: string): Promise<ReversalRow | undefined> {
  const [r] = await q<ReversalRow[]>`
    select * from payments.shared_spend_reversals where org_id = ${s.orgId} and livemode = ${s.livemode} and sale_transaction_id = ${saleTransactionId}`;
  return r === undefined ? undefined : r;
}

export async function insertReversal(
  q: Q,
  s: Scope,
  r: { saleTransactionId: string; spendReferenceId: string; reason: string | null; metadata: Record<string, unknown>; requestId: string; keyId: string },
): Promise<ReversalRow> {
  const [row] = await q<ReversalRow[]>`
    insert into payments.shared_spend_reversals (org_id, livemode, sale_transaction_id, spend_reference_id, reason, metadata, request_id, key_id,
      status)
    values (${s.orgId}, ${s.livemode}, ${r.saleTransactionId}, ${r.spendReferenceId}, ${r.reason}, ${q.json(r.metadata as postgres.JSONValue)},
      ${r.requestId}, ${r.keyId}, 'reversing')
    returning *`;
  if (row === undefined) throw new Error("reversal insert returned nothing");
  return row;
}

export async function markReversed(q: Q, s: Scope, saleTransactionId: string, reversalTxn: string, response: Record<string, unknown>): Promise<boolean> {
  const res = await q`
    update payments.shared_spend_reversals set status = 'reversed', reversal_transaction_id = ${reversalTxn},
      response = ${q.json(response as postgres.JSONValue)}, updated_at = now()
    where org_id = ${s.orgId} and livemode = ${s.livemode} and sale_transaction_id = ${saleTransactionId} and status = 'reversing'`;
  return res.count === 1;
}

export async function stuckReversals(q: Q, graceMs: number, limit: number): Promise<ReversalRow[]> {
  const rows = await q<ReversalRow[]>`
    select * from payments.shared_spend_reversals
    where status = 'reversing' and updated_at < now() - make_interval(secs => ${graceMs / 1000})
    order by updated_at limit ${limit}`;
  return rows;
}
