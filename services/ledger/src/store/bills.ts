/** Bills (record-bill) and what pay-bill has paid of them. */
import type { Tenant } from "@treasury/contracts";
import type { BillRow } from "../usecases/rows.ts";
import { money, type Q } from "./db.ts";

type RawBill = Omit<BillRow, "amount" | "paid_amount"> & { amount: string; paid_amount: string };
const toBill = (r: RawBill): BillRow => ({ ...r, amount: money(r.amount), paid_amount: money(r.paid_amount) });
const cols = (q: Q) => q`id, transaction_id, vendor_name, amount, paid_amount, due_date`;

export async function insertBill(
  q: Q,
  s: Tenant,
  b: { id: string; transactionId: string; vendorName: string; amount: number; dueDate: Date | null },
): Promise<void> {
  await q`insert into ledger.bills (id, org_id, livemode, transaction_id, vendor_name, amount, due_date)
    values (${b.id}, ${s.orgId}, ${s.livemode}, ${b.transactionId}, ${b.vendorName}, ${b.amount}, ${b.dueDate})`;
}

export async function findBill(q: Q, s: Tenant, by: { id?: string | undefined; transactionId?: string | undefined }): Promise<BillRow | undefined> {
  const [row] = await q<RawBill[]>`
    select ${cols(q)} from ledger.bills
    where org_id = ${s.orgId} and livemode = ${s.livemode}
      and ${by.id !== undefined ? q`id = ${by.id}` : q`transaction_id = ${by.transactionId ?? ""}`}`;
  return row === undefined ? undefined : toBill(row);
}

export async function lockBill(q: Q, s: Tenant, id: string): Promise<BillRow | undefined> {
  const [row] = await q<RawBill[]>`
    select ${cols(q)} from ledger.bills where id = ${id} and org_id = ${s.orgId} and livemode = ${s.livemode} for update`;
  return row === undefined ? undefined : toBill(row);
}

export async function payBillAmount(q: Q, s: Tenant, id: string, amount: number): Promise<BillRow> {
  const [row] = await q<RawBill[]>`
    update ledger.bills set paid_amount = paid_amount + ${amount}
    where id = ${id} and org_id = ${s.orgId} and livemode = ${s.livemode}
    returning ${cols(q)}`;
  if (row === undefined) throw new Error(`bill ${id} not updated`);
  return toBill(row);
}
