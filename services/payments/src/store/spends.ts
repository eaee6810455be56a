/** SQL of shared-wallet spends and the reversal audit log. */
import { parseCents } from "@treasury/contracts";
import type postgres from "postgres";
import type { Tenant } from "@treasury/contracts";
import { withTx } from "@treasury/service-kit";
import type { NewReversal, NewSpend, ReversalRow, SpendRow } from "../domain/records.ts";
import type { SpendStore } from "../usecases/ports.ts";
import type { Q, Sql } from "./db.ts";

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

export async function upsertSpend(q: Q, s: Tenant, sp: NewSpend): Promise<void> {
  await q`
    insert into payments.shared_spends (org_id, livemode, reference_id, transaction_id, consumer_sub, consumer_wallet_id, creator_id, amount,
      sales_tax, creator_amount, platform_amount, creator_bps, product_id, product_name, metadata, status)
    values (${s.orgId}, ${s.livemode}, ${sp.reference_id}, ${sp.transaction_id}, ${sp.consumer_sub}, ${sp.consumer_wallet_id}, ${sp.creator_id},
      ${sp.amount}, ${sp.sales_tax}, ${sp.creator_amount}, ${sp.platform_amount}, ${sp.creator_bps}, ${sp.product_id}, ${sp.product_name},
      ${q.json(sp.metadata as postgres.JSONValue)}, 'settled')
    on conflict do nothing`;
}

export async function findSpendByTransaction(q: Q, s: Tenant, transactionId: string, lock = false): Promise<SpendRow | undefined> {
  const [r] = lock
    ? await q<
        RawSpend[]
      >`select * from payments.shared_spends where org_id = ${s.orgId} and livemode = ${s.livemode} and transaction_id = ${transactionId} for update`
    : await q<RawSpend[]>`select * from payments.shared_spends where org_id = ${s.orgId} and livemode = ${s.livemode} and transaction_id = ${transactionId}`;
  return r === undefined ? undefined : parseSpend(r);
}

export async function setSpendStatus(q: Q, s: Tenant, transactionId: string, status: SpendRow["status"]): Promise<void> {
  await q`update payments.shared_spends set status = ${status} where org_id = ${s.orgId} and livemode = ${s.livemode} and transaction_id = ${transactionId}`;
}

export async function findReversal(q: Q, s: Tenant, saleTransactionId: string): Promise<ReversalRow | undefined> {
  const [r] = await q<ReversalRow[]>`
    select * from payments.shared_spend_reversals where org_id = ${s.orgId} and livemode = ${s.livemode} and sale_transaction_id = ${saleTransactionId}`;
  return r === undefined ? undefined : r;
}

export async function insertReversal(q: Q, s: Tenant, r: NewReversal): Promise<ReversalRow> {
  const [row] = await q<ReversalRow[]>`
    insert into payments.shared_spend_reversals (org_id, livemode, sale_transaction_id, spend_reference_id, reason, metadata, request_id, key_id,
      status)
    values (${s.orgId}, ${s.livemode}, ${r.saleTransactionId}, ${r.spendReferenceId}, ${r.reason}, ${q.json(r.metadata as postgres.JSONValue)},
      ${r.requestId}, ${r.keyId}, 'reversing')
    returning *`;
  if (row === undefined) throw new Error("reversal insert returned nothing");
  return row;
}

export async function markReversed(q: Q, s: Tenant, saleTransactionId: string, reversalTxn: string, response: Record<string, unknown>): Promise<boolean> {
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

export function pgSpendStore(sql: Sql): SpendStore {
  return {
    record: (tenant, spend) => upsertSpend(sql, tenant, spend),
    findByTransaction: (tenant, transactionId) => findSpendByTransaction(sql, tenant, transactionId),
    findReversal: (tenant, saleTransactionId) => findReversal(sql, tenant, saleTransactionId),
    recordReversalIntent: (tenant, r) =>
      withTx(sql, async (tx) => {
        const locked = await findSpendByTransaction(tx, tenant, r.saleTransactionId, true);
        if (locked === undefined) throw new Error("spend vanished");
        const again = await findReversal(tx, tenant, r.saleTransactionId);
        if (again !== undefined) return again;
        await setSpendStatus(tx, tenant, r.saleTransactionId, "reversing");
        return insertReversal(tx, tenant, r);
      }),
    settleReversal: async (tenant, saleTransactionId, reversalTransactionId, response) => {
      await withTx(sql, async (tx) => {
        if (await markReversed(tx, tenant, saleTransactionId, reversalTransactionId, response)) await setSpendStatus(tx, tenant, saleTransactionId, "reversed");
      });
    },
    stuckReversals: (graceMs, limit) => stuckReversals(sql, graceMs, limit),
  };
}
