/**
 * Invoices as values: line totals, numbering, the states an invoice moves through, and what the API shows.
 * Pure: no I/O, no clock (today is passed in).
 */
import { AMOUNT_MAX_CENTS, cents, DomainError, type Cents, type schemas } from "@treasury/contracts";

/** Stored states; `overdue` is shown, never stored: an open invoice past its due date on the org's clock. */
export type StoredStatus = "draft" | "sent" | "partially_paid" | "paid" | "void";

export interface InvoiceLine {
  line_no: number;
  description: string;
  /** As the client wrote it, normalised ("1.5"). */
  quantity: string;
  unit_price_cents: Cents;
  amount_cents: Cents;
}

export interface Invoice {
  id: string;
  org_id: string;
  livemode: boolean;
  number: string;
  customer_name: string;
  customer_email: string | null;
  customer_id: string | null;
  customer_address: unknown;
  issue_date: string;
  due_date: string;
  notes: string | null;
  terms: string | null;
  reference_id: string | null;
  /** sha256 of the create body: a replay with another body under the same reference_id is a conflict. */
  request_hash: string;
  metadata: Record<string, unknown>;
  status: StoredStatus;
  total_cents: Cents;
  amount_paid_cents: Cents;
  send_transaction_id: string | null;
  void_transaction_id: string | null;
  /** Built from the browser listener's base URL the creating request carried, so events and jobs show it too. */
  hosted_url: string;
  lines: InvoiceLine[];
  created_at: Date;
  sent_at: Date | null;
  paid_at: Date | null;
  voided_at: Date | null;
}

export interface Payment {
  id: string;
  invoice_id: string;
  reference_id: string;
  amount_cents: Cents;
  paid_at: Date;
  payment_method: string | null;
  source: "api" | "bank_line";
  transaction_id: string | null;
  created_at: Date;
}

/** Ten-thousandths in one unit of quantity: four decimal places, kept exact as integers. */
const QUANTITY_SCALE = 10_000n;

/** A quantity already checked by the contracts (positive, at most four places) as an exact decimal string. */
export function normaliseQuantity(q: number | string): string {
  const text = typeof q === "number" ? String(q) : q.trim();
  const [whole = "0", frac = ""] = text.split(".");
  const trimmed = frac.replace(/0+$/, "");
  return `${BigInt(whole).toString()}${trimmed === "" ? "" : `.${trimmed}`}`;
}

function quantityE4(quantity: string): bigint {
  const [whole = "0", frac = ""] = quantity.split(".");
  return BigInt(whole) * QUANTITY_SCALE + BigInt(frac.padEnd(4, "0"));
}

/**
 * quantity × unit price in cents, rounded half up to a whole cent: computed in ten-thousandths of a cent with
 * BigInt, so no floating point touches money. Throws invalid_quantity when a quantity slipped past the contracts.
 */
export function lineAmount(quantity: string, unitPriceCents: number): Cents {
  const q = quantityE4(quantity);
  if (q <= 0n) throw new DomainError("invalid_quantity", `Quantity ${quantity} must be positive`);
  const amount = (q * BigInt(unitPriceCents) + QUANTITY_SCALE / 2n) / QUANTITY_SCALE;
  if (amount <= 0n) throw new DomainError("invalid_quantity", `Quantity ${quantity} × ${unitPriceCents} cents rounds to nothing`);
  return cents(Number(amount));
}

/** The lines with their amounts and the invoice's total; a total above one operation's ceiling is amount_too_large. */
export function priceLines(items: readonly schemas.CreateInvoiceBody["line_items"][number][]): { lines: InvoiceLine[]; total: Cents } {
  if (items.length === 0) throw new DomainError("invoice_line_items_required", "An invoice needs at least one line item");
  let total = 0n;
  const lines = items.map((item, i) => {
    const quantity = normaliseQuantity(item.quantity);
    const amount = lineAmount(quantity, item.unit_price_cents);
    total += BigInt(amount);
    return { line_no: i + 1, description: item.description, quantity, unit_price_cents: cents(item.unit_price_cents), amount_cents: amount };
  });
  if (total > BigInt(AMOUNT_MAX_CENTS)) {
    throw new DomainError("amount_too_large", `The invoice's total is above ${AMOUNT_MAX_CENTS} cents`, { hint: "Split it into several invoices" });
  }
  return { lines, total: cents(Number(total)) };
}

/** `INV-000042`: the org's sequence number in its environment, six digits at least (more once it passes 999999). */
export function invoiceNumber(seq: number): string {
  return `INV-${String(seq).padStart(6, "0")}`;
}

/** Open: sent and not fully paid, so it can take payments and can fall overdue. */
export function isOpen(status: StoredStatus): boolean {
  return status === "sent" || status === "partially_paid";
}

/** The status the API shows on `today` (YYYY-MM-DD on the org's clock). */
export function shownStatus(inv: Pick<Invoice, "status" | "due_date">, today: string): schemas.InvoiceStatus {
  return isOpen(inv.status) && inv.due_date < today ? "overdue" : inv.status;
}

/** The calendar day of an instant, UTC. */
export function dayOf(at: Date): string {
  return at.toISOString().slice(0, 10);
}

export function presentPayment(p: Payment) {
  return {
    id: p.id,
    invoice_id: p.invoice_id,
    reference_id: p.reference_id,
    amount_cents: p.amount_cents,
    paid_at: p.paid_at.toISOString(),
    payment_method: p.payment_method,
    source: p.source,
    transaction_id: p.transaction_id,
    created_at: p.created_at.toISOString(),
  };
}

export function hostedUrl(altBaseUrl: string, id: string): string {
  return `${altBaseUrl.replace(/\/+$/, "")}/v1/invoices/${id}/view`;
}

/** The invoice as the API, the events and the hosted page show it. */
export function presentInvoice(inv: Invoice, today: string, payments?: readonly Payment[]) {
  return {
    id: inv.id,
    number: inv.number,
    status: shownStatus(inv, today),
    customer_name: inv.customer_name,
    customer_email: inv.customer_email,
    customer_id: inv.customer_id,
    customer_address: inv.customer_address ?? null,
    line_items: inv.lines.map((l) => ({
      description: l.description,
      quantity: l.quantity,
      unit_price_cents: l.unit_price_cents,
      amount_cents: l.amount_cents,
    })),
    currency: "USD",
    total_cents: inv.total_cents,
    amount_paid_cents: inv.amount_paid_cents,
    amount_due_cents: inv.status === "void" ? 0 : inv.total_cents - inv.amount_paid_cents,
    issue_date: inv.issue_date,
    due_date: inv.due_date,
    notes: inv.notes,
    terms: inv.terms,
    reference_id: inv.reference_id,
    metadata: inv.metadata,
    transaction_id: inv.send_transaction_id,
    void_transaction_id: inv.void_transaction_id,
    hosted_url: inv.hosted_url,
    livemode: inv.livemode,
    created_at: inv.created_at.toISOString(),
    sent_at: inv.sent_at?.toISOString() ?? null,
    paid_at: inv.paid_at?.toISOString() ?? null,
    voided_at: inv.voided_at?.toISOString() ?? null,
    ...(payments === undefined ? {} : { payments: payments.map(presentPayment) }),
  };
}
export type PresentedInvoice = ReturnType<typeof presentInvoice>;
