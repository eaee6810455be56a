/**
 * The hosted invoice page (browser listener, authorised by the unguessable invoice id in the path, never an API
 * key): who it is for, its status and due date, the lines as one table a screen reader can walk (a caption, column
 * headers, the total, what was paid and what is due), amounts formatted from integer cents.
 */
import { prefixedId, type PageRequest, type RpcReply } from "@treasury/contracts";
import { esc, htmlAnswer, usd } from "@treasury/service-kit";
import { presentInvoice, type PresentedInvoice } from "../domain/invoice.ts";
import type { InvoicingDeps } from "../usecases/ports.ts";
import { getInvoice } from "../usecases/read.ts";
import { notFound } from "../usecases/transitions.ts";

const STYLE = `
body{font-family:system-ui,-apple-system,sans-serif;background:#f6f7f9;margin:0;color:#1a1f36}
main{max-width:760px;margin:48px auto;background:#fff;border-radius:12px;padding:32px;box-shadow:0 2px 12px rgba(0,0,0,.08)}
h1{font-size:22px;margin:0 0 4px}.muted{color:#596275}
dl{display:grid;grid-template-columns:max-content 1fr;gap:4px 16px;margin:16px 0}dt{color:#596275}dd{margin:0}
table{width:100%;border-collapse:collapse;font-size:14px;margin-top:16px}caption{text-align:left;font-weight:600;padding-bottom:8px}
td,th{padding:6px 4px;border-bottom:1px solid #eef1f4;text-align:left;vertical-align:top}.num{text-align:right;font-variant-numeric:tabular-nums}
tfoot th,tfoot td{font-weight:600}
.status{display:inline-block;padding:2px 8px;border-radius:10px;background:#e8eefc;color:#1a3a8f;font-size:13px}
.status-overdue{background:#fde8e8;color:#8f1a1a}.status-paid{background:#e3f6ea;color:#15603a}.status-void{background:#eceef1;color:#3c4257}
.sandbox{background:#fff4d6;padding:8px;border-radius:6px;font-size:13px}
@media (max-width:600px){main{margin:0;border-radius:0;padding:16px 12px}table{font-size:13px;table-layout:fixed}td,th{padding:6px 2px;overflow-wrap:anywhere}}
@media print{body{background:#fff}main{box-shadow:none;border-radius:0;margin:0;max-width:none;padding:0}}`;

const STATUS_LABELS: Record<string, string> = {
  draft: "Draft",
  sent: "Open",
  partially_paid: "Partially paid",
  paid: "Paid",
  void: "Void",
  overdue: "Overdue",
};

const num = (cents: number, id?: string) => `<td class="num"${id === undefined ? "" : ` id="${id}"`}>${esc(usd(cents))}</td>`;

function table(inv: PresentedInvoice): string {
  const rows = inv.line_items.map(
    (l) => `<tr><td>${esc(l.description)}</td><td class="num">${esc(l.quantity)}</td>${num(l.unit_price_cents)}${num(l.amount_cents)}</tr>`,
  );
  return (
    `<table id="lines"><caption>Items on invoice ${esc(inv.number)}</caption>` +
    `<thead><tr><th scope="col">Description</th><th scope="col" class="num">Quantity</th><th scope="col" class="num">Unit price</th>` +
    `<th scope="col" class="num">Amount</th></tr></thead><tbody>${rows.join("")}</tbody>` +
    `<tfoot><tr><th scope="row" colspan="3">Total</th>${num(inv.total_cents, "total")}</tr>` +
    `<tr><th scope="row" colspan="3">Paid</th>${num(inv.amount_paid_cents, "paid")}</tr>` +
    `<tr><th scope="row" colspan="3">Amount due</th>${num(inv.amount_due_cents, "due")}</tr></tfoot></table>`
  );
}

export async function invoicePage(deps: Pick<InvoicingDeps, "invoices" | "now">, req: PageRequest): Promise<RpcReply> {
  const id = prefixedId("inv").safeParse(req.params["invoice_id"]);
  if (!id.success) throw notFound(String(req.params["invoice_id"] ?? ""));
  // The id is the capability: the page reads the invoice in whichever environment it was created.
  const found = await deps.invoices.byId(id.data);
  if (found === undefined) throw notFound(id.data);
  const { invoice, today } = await getInvoice(deps, { orgId: found.org_id, livemode: found.livemode }, found.id);
  const inv = presentInvoice(invoice, today);
  const sandbox = inv.livemode ? "" : `<p class="sandbox" id="sandbox-note">Sandbox invoice: no real money is owed.</p>`;
  const body =
    `<h1>Invoice <span id="number">${esc(inv.number)}</span></h1>` +
    `<p><span id="status" class="status status-${esc(inv.status)}">${esc(STATUS_LABELS[inv.status] ?? inv.status)}</span></p>${sandbox}` +
    `<dl><dt>Billed to</dt><dd id="customer">${esc(inv.customer_name)}</dd><dt>Issued</dt><dd id="issue-date">${esc(inv.issue_date)}</dd>` +
    `<dt>Due</dt><dd id="due-date">${esc(inv.due_date)}</dd><dt>Amount due</dt><dd><strong id="amount-due">${esc(usd(inv.amount_due_cents))}</strong></dd></dl>` +
    table(inv) +
    (inv.terms === null ? "" : `<p class="muted" id="terms">Terms: ${esc(inv.terms)}</p>`) +
    (inv.notes === null ? "" : `<p id="notes">${esc(inv.notes)}</p>`);
  return htmlAnswer(200, `Invoice ${inv.number}`, STYLE, body);
}
