/** getReceipt: a receipt of this org and environment by id. */
import { DomainError } from "@treasury/contracts";
import type { Q, Scope } from "../store/db.ts";
import { findReceipt, type ReceiptRow } from "../store/receipts.ts";

const RECEIPT_ID_RE = /^rcpt_[A-Za-z0-9]{1,64}$/;

/** Errors: receipt_not_found (unknown, malformed, or another org or environment's id). */
export async function loadReceipt(q: Q, scope: Scope, receiptId: string): Promise<ReceiptRow> {
  const row = RECEIPT_ID_RE.test(receiptId) ? await findReceipt(q, scope, receiptId) : undefined;
  if (row === undefined) throw new DomainError("receipt_not_found", `Receipt ${receiptId} not found`);
  return row;
}
