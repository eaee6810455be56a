/**
 * Invoicing (docs/api.md, Invoicing; wire decisions §11): invoices with line items whose totals we compute,
 * payments against them, and AR / AP aging as of a date.
 */
import { z } from "zod";
import { PositiveCents } from "../money.ts";
import { ReferenceId } from "../ids.ts";
import { email, isoDate, Metadata, pagingInt, str } from "./common.ts";

export const INVOICE_STATUSES = ["draft", "sent", "partially_paid", "paid", "void", "overdue"] as const;
export type InvoiceStatus = (typeof INVOICE_STATUSES)[number];

/** Line items per invoice: a bound on the work of one create and on the page that shows it. */
export const INVOICE_LINES_MAX = 100;
/** Decimal places a quantity may have: totals stay exact in integer arithmetic (quantity in ten-thousandths). */
export const QUANTITY_DECIMALS_MAX = 4;
export const QUANTITY_MAX = 1_000_000;

const invalidQuantity = { params: { error_code: "invalid_quantity" } };
const QUANTITY_PATTERN = /^\d{1,7}(\.\d{1,4})?$/;

/**
 * A positive quantity with at most four decimal places, as a JSON number or a decimal string ("1.5"). A number
 * is read through its shortest decimal form, so 0.1 is exactly one tenth; zero, negative, more places → invalid_quantity.
 */
export const Quantity = z.union([z.number(), z.string()], { error: "must be a number or a decimal string" }).refine(
  (q) => {
    const text = typeof q === "number" ? String(q) : q.trim();
    return QUANTITY_PATTERN.test(text) && Number(text) > 0 && Number(text) <= QUANTITY_MAX;
  },
  { message: `must be positive, at most ${QUANTITY_MAX}, with at most ${QUANTITY_DECIMALS_MAX} decimal places`, ...invalidQuantity },
);

export const InvoiceLineItem = z.object({
  description: str(500).min(1),
  quantity: Quantity.default(1),
  unit_price_cents: PositiveCents,
});

/** A calendar date `YYYY-MM-DD` (due dates and issue dates are days, not instants). */
export const CalendarDate = z
  .string({ error: "must be a string" })
  .regex(/^\d{4}-\d{2}-\d{2}$/, { message: "must be a date YYYY-MM-DD" })
  .refine((s) => !Number.isNaN(Date.parse(`${s}T00:00:00Z`)) && new Date(`${s}T00:00:00Z`).toISOString().startsWith(s), {
    message: "must be a real calendar date",
  });

export const CreateInvoiceBody = z.object({
  customer_name: str(255).min(1),
  customer_email: email.optional(),
  customer_id: str(100).min(1).optional(),
  customer_address: z.union([str(1000), z.record(z.string(), z.unknown())]).optional(),
  line_items: z
    .array(InvoiceLineItem)
    .max(INVOICE_LINES_MAX)
    .refine((items) => items.length > 0, { message: "at least one line item", params: { error_code: "invoice_line_items_required" } }),
  /** Default: today on the org's clock. The receivable is posted with it as its accounting date. */
  issue_date: CalendarDate.optional(),
  /** Default: the issue date (due on receipt). */
  due_date: CalendarDate.optional(),
  notes: str(2000).optional(),
  terms: str(500).optional(),
  /** Idempotency: a second create with the same reference_id is 409 duplicate_reference_id with the invoice. */
  reference_id: ReferenceId.optional(),
  metadata: Metadata.optional(),
});
export type CreateInvoiceBody = z.infer<typeof CreateInvoiceBody>;

export const ListInvoicesQuery = z.object({
  status: z.enum(INVOICE_STATUSES).optional(),
  customer_id: str(100).optional(),
  limit: pagingInt(1, 100).optional(),
  offset: pagingInt(0, 1_000_000).optional(),
});

export const RecordInvoicePaymentBody = z.object({
  amount: PositiveCents,
  /** Idempotency of the payment, per org and environment: the ledger reference is derived from it. */
  reference_id: ReferenceId,
  paid_at: isoDate.optional(),
  payment_method: str(64).optional(),
  metadata: Metadata.optional(),
});

/**
 * `POST /v1/receive-payment` as the official SDK sends it (`receivePayment`): the invoice named by the ledger
 * transaction that posted its receivable (`invoice_transaction_id`), or by `invoice_id`.
 */
export const ReceivePaymentBody = z
  .object({
    amount: PositiveCents,
    invoice_transaction_id: str(100).min(1).optional(),
    invoice_id: str(100).min(1).optional(),
    customer_name: str(255).optional(),
    customer_id: str(100).optional(),
    reference_id: ReferenceId,
    payment_method: str(64).optional(),
    payment_date: isoDate.optional(),
    metadata: Metadata.optional(),
  })
  .refine((b) => b.invoice_transaction_id !== undefined || b.invoice_id !== undefined, {
    message: "invoice_transaction_id or invoice_id is required",
    path: ["invoice_transaction_id"],
  });

/** `GET /v1/ar-aging` and `/v1/ap-aging`: as of the end of `as_of_date` (default: today on the org's clock). */
export const AgingQuery = z.object({ as_of_date: CalendarDate.optional() });

export const AGING_BUCKETS = ["current", "days_1_30", "days_31_60", "days_61_90", "over_90"] as const;
export type AgingBucket = (typeof AGING_BUCKETS)[number];
