/** Rows of the invoicing schema as postgres.js answers them, and the domain values made from them. */
import { parseCents, type Tenant } from "@treasury/contracts";
import { writeOutbox, type Tx } from "@treasury/service-kit";
import type postgres from "postgres";
import { normaliseQuantity, type Invoice, type InvoiceLine, type Payment } from "../domain/invoice.ts";
import type { PendingEvent, Posting } from "../usecases/ports.ts";

export type Q = postgres.Sql | Tx;

/** An invoices row: the invoice without its lines, its amounts as postgres.js answers bigint (strings). */
export type InvoiceRow = Omit<Invoice, "lines" | "total_cents" | "amount_paid_cents"> & { total_cents: string; amount_paid_cents: string };

interface LineRow {
  invoice_id: string;
  line_no: number;
  description: string;
  quantity: string;
  unit_price_cents: string;
  amount_cents: string;
}

/** The invoice columns, dates as their calendar text. */
export const INVOICE_COLS = `id, org_id, livemode, number, customer_name, customer_email, customer_id, customer_address,
  issue_date::text as issue_date, due_date::text as due_date, notes, terms, reference_id, request_hash, metadata, status,
  total_cents::text as total_cents, amount_paid_cents::text as amount_paid_cents, hosted_url, send_transaction_id,
  void_transaction_id, created_at, sent_at, paid_at, voided_at`;

function lineOf(r: LineRow): InvoiceLine {
  return {
    line_no: r.line_no,
    description: r.description,
    quantity: normaliseQuantity(r.quantity),
    unit_price_cents: parseCents(r.unit_price_cents),
    amount_cents: parseCents(r.amount_cents),
  };
}

/** Invoices with their lines, read in one more statement for all of them. */
export async function withLines(q: Q, rows: readonly InvoiceRow[]): Promise<Invoice[]> {
  if (rows.length === 0) return [];
  const lines = await q<LineRow[]>`
    select invoice_id, line_no, description, quantity::text as quantity, unit_price_cents::text as unit_price_cents, amount_cents::text as amount_cents
    from invoicing.invoice_lines where invoice_id = any(${rows.map((r) => r.id)}) order by invoice_id, line_no`;
  const byInvoice = new Map<string, InvoiceLine[]>();
  for (const l of lines) byInvoice.set(l.invoice_id, [...(byInvoice.get(l.invoice_id) ?? []), lineOf(l)]);
  return rows.map((r) => ({
    ...r,
    total_cents: parseCents(r.total_cents),
    amount_paid_cents: parseCents(r.amount_paid_cents),
    lines: byInvoice.get(r.id) ?? [],
  }));
}

export interface PaymentRow {
  id: string;
  invoice_id: string;
  reference_id: string;
  request_hash: string;
  amount_cents: string;
  paid_at: Date;
  payment_method: string | null;
  source: "api" | "bank_line";
  transaction_id: string | null;
  created_at: Date;
}

export const PAYMENT_COLS = `id, invoice_id, reference_id, request_hash, amount_cents::text as amount_cents, paid_at, payment_method, source, transaction_id, created_at`;

export function paymentOf(r: PaymentRow): Payment & { request_hash: string } {
  return { ...r, amount_cents: parseCents(r.amount_cents) };
}

export interface PostingRow extends Omit<Posting, "amount_cents"> {
  amount_cents: string;
}

export const POSTING_COLS = `id, org_id, livemode, invoice_id, action, payment_id, ledger_kind, ledger_reference, amount_cents::text as amount_cents,
  effective_date, event_types, status, transaction_id`;

export function postingOf(r: PostingRow): Posting {
  return { ...r, amount_cents: parseCents(r.amount_cents) };
}

export async function writeEvents(tx: Tx, t: Tenant, events: readonly PendingEvent[]): Promise<void> {
  for (const e of events) await writeOutbox(tx, "invoicing", { type: e.type, org_id: t.orgId, livemode: t.livemode, data: e.data });
}
