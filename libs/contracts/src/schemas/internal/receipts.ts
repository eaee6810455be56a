/** What the receipts service reads from the ledger and payments; not part of the public API. */
import { z } from "zod";
import { Uuid } from "../../ids.ts";
import { InternalScope } from "./scope.ts";

/**
 * Internal reads the receipts service makes (request/reply, never through the gateway): the ledger's record of
 * one transaction, and the sale behind a checkout session. Errors: transaction_not_found, checkout_session_not_found.
 */
export const TRANSACTION_RECORD_OPERATION = "internal.transactionRecord";
export const CHECKOUT_SALE_OPERATION = "internal.checkoutSale";
export const TransactionRecordRequest = z.object({ ...InternalScope, transaction_id: z.string().min(1).max(100) });
export const CheckoutSaleRequest = z.object({ ...InternalScope, checkout_id: Uuid });
/** One entry as the ledger wrote it (balance_after is left out: a receipt must not reveal a wallet's balance). */
export interface TransactionRecordEntry {
  id: string;
  account_id: string;
  account_type: string;
  entity_id: string | null;
  entry_type: "debit" | "credit";
  amount: number;
}
/** A transaction as the ledger recorded it: only facts that never change after posting. */
export interface TransactionRecord {
  id: string;
  org_id: string;
  livemode: boolean;
  transaction_type: string;
  reference_id: string;
  amount: number;
  currency: string;
  description: string | null;
  metadata: Record<string, unknown>;
  reversal_of: string | null;
  effective_at: string | null;
  created_at: string;
  entries: TransactionRecordEntry[];
  /** Present when the transaction records a sale. */
  sale: {
    sale_reference: string;
    participant_id: string | null;
    participant_display_name: string | null;
    gross: number;
    sales_tax: number;
  } | null;
}
/** What receipts need of a checkout session. */
export interface CheckoutSale {
  id: string;
  status: "pending" | "completing" | "completed" | "failed";
  sale_transaction_id: string | null;
  merchant_name: string;
  product_name: string | null;
  amount: number;
  currency: string;
}
