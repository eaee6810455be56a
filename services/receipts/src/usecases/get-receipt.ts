/** getReceipt: a receipt of this org and environment by id. */
import { DomainError, type Tenant } from "@treasury/contracts";
import type { ReceiptRow, ReceiptStore } from "./ports.ts";

const RECEIPT_ID_RE = /^rcpt_[A-Za-z0-9]{1,64}$/;

/** Errors: receipt_not_found (unknown, malformed, or another org or environment's id). */
export async function loadReceipt(receipts: ReceiptStore, tenant: Tenant, receiptId: string): Promise<ReceiptRow> {
  const row = RECEIPT_ID_RE.test(receiptId) ? await receipts.find(tenant, receiptId) : undefined;
  if (row === undefined) throw new DomainError("receipt_not_found", `Receipt ${receiptId} not found`);
  return row;
}
