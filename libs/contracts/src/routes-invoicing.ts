/**
 * The invoicing operations of the route table (wire decisions §11; docs/api.md, Invoicing), in a file of their own
 * so the table stays within a file's length: writes need the accounting scope, reads (aging included) read.
 * Money-moving writes (send, payments, void) are in the treasury_write rate class.
 */
import type { RouteDef } from "./route-def.ts";
import * as S from "./schemas.ts";

const service = "invoicing" as const;
const read = { method: "GET", scope: "read", rateClass: "read", service } as const;
const write = { method: "POST", scope: "accounting", service } as const;

export const INVOICING_ROUTES: readonly RouteDef[] = [
  { ...read, path: "/v1/invoices", operation: "listInvoices", summary: "List invoices", query: S.ListInvoicesQuery },
  {
    ...write,
    path: "/v1/invoices",
    rateClass: "write",
    operation: "createInvoice",
    summary: "Create a draft invoice (totals computed from its line items; idempotent on reference_id)",
    body: S.CreateInvoiceBody,
    creates: true,
  },
  { ...read, path: "/v1/invoices/:invoice_id", operation: "getInvoice", summary: "An invoice with its lines and payments" },
  {
    ...write,
    path: "/v1/invoices/:invoice_id/send",
    rateClass: "treasury_write",
    operation: "sendInvoice",
    summary: "Send an invoice: posts the receivable (accounts receivable / income) as of its issue date",
  },
  {
    ...write,
    path: "/v1/invoices/:invoice_id/record-payment",
    rateClass: "treasury_write",
    operation: "recordInvoicePayment",
    summary: "Record a payment against an invoice (cash / receivable; idempotent on reference_id)",
    body: S.RecordInvoicePaymentBody,
    creates: true,
  },
  {
    ...write,
    path: "/v1/invoices/:invoice_id/void",
    rateClass: "treasury_write",
    operation: "voidInvoice",
    summary: "Void an invoice, reversing its receivable",
  },
  {
    ...write,
    path: "/v1/receive-payment",
    rateClass: "treasury_write",
    operation: "receivePayment",
    summary: "Record a payment against the invoice a receivable transaction names (as the SDK calls it)",
    body: S.ReceivePaymentBody,
    creates: true,
  },
  { ...read, path: "/v1/ar-aging", operation: "getArAging", summary: "Accounts receivable aging as of a date", query: S.AgingQuery },
  { ...read, path: "/v1/ap-aging", operation: "getApAging", summary: "Accounts payable aging as of a date", query: S.AgingQuery },
];
