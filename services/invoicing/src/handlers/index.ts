/**
 * RPC handlers of invoicing: decode with the shared contracts → use case → named-key body; the handler picks the
 * status. `svc.invoicing.internal.matchBankLine` is the ledger's, during auto-match (usecases/receive-payment.ts).
 */
import { DomainError, parseOrThrow, prefixedId, schemas, tenantOf } from "@treasury/contracts";
import type { Service } from "@treasury/service-kit";
import { presentInvoice, presentPayment, dayOf } from "../domain/invoice.ts";
import { invoicePage } from "../pages/invoice-page.ts";
import { apAging, arAging } from "../usecases/aging.ts";
import { createInvoice } from "../usecases/create-invoice.ts";
import type { InvoicingDeps } from "../usecases/ports.ts";
import { getInvoice, listInvoices } from "../usecases/read.ts";
import { matchBankLine, receivePayment } from "../usecases/receive-payment.ts";
import { recordPayment } from "../usecases/record-payment.ts";
import { sendInvoice, voidInvoice } from "../usecases/transitions.ts";

function invoiceId(params: Record<string, string>): string {
  const parsed = prefixedId("inv").safeParse(params["invoice_id"]);
  // An id of another shape names no invoice: 404, as for an id of another org.
  if (!parsed.success) throw new DomainError("invoice_not_found", `Invoice ${String(params["invoice_id"] ?? "")} not found`);
  return parsed.data;
}

export function registerHandlers(svc: Pick<Service, "handle" | "handleInternal" | "handlePage">, deps: InvoicingDeps): void {
  const today = (t: Parameters<InvoicingDeps["now"]>[0]) => dayOf(deps.now(t));
  svc.handle("createInvoice", async (req, ctx) => {
    const tenant = tenantOf(ctx.auth);
    const body = parseOrThrow(schemas.CreateInvoiceBody, req.body);
    const invoice = await createInvoice(deps, tenant, body, req.alt_base_url ?? "");
    return { status: 201, body: { invoice: presentInvoice(invoice, today(tenant)) } };
  });
  svc.handle("listInvoices", async (req, ctx) => {
    const page = await listInvoices(deps, tenantOf(ctx.auth), parseOrThrow(schemas.ListInvoicesQuery, req.query, "query"));
    return { body: { invoices: page.invoices.map((i) => presentInvoice(i, page.today)), total: page.total, limit: page.limit, offset: page.offset } };
  });
  svc.handle("getInvoice", async (req, ctx) => {
    const { invoice, payments, today: day } = await getInvoice(deps, tenantOf(ctx.auth), invoiceId(req.params));
    return { body: { invoice: presentInvoice(invoice, day, payments) } };
  });
  svc.handle("sendInvoice", async (req, ctx) => {
    const tenant = tenantOf(ctx.auth);
    return { body: { invoice: presentInvoice(await sendInvoice(deps, tenant, invoiceId(req.params)), today(tenant)) } };
  });
  svc.handle("voidInvoice", async (req, ctx) => {
    const tenant = tenantOf(ctx.auth);
    return { body: { invoice: presentInvoice(await voidInvoice(deps, tenant, invoiceId(req.params)), today(tenant)) } };
  });
  svc.handle("recordInvoicePayment", async (req, ctx) => {
    const tenant = tenantOf(ctx.auth);
    const body = parseOrThrow(schemas.RecordInvoicePaymentBody, req.body);
    const done = await recordPayment(deps, tenant, invoiceId(req.params), { ...body, source: "api" });
    return { status: 201, body: { invoice: presentInvoice(done.invoice, today(tenant)), payment: presentPayment(done.payment) } };
  });
  svc.handle("receivePayment", async (req, ctx) => {
    const tenant = tenantOf(ctx.auth);
    const done = await receivePayment(deps, tenant, parseOrThrow(schemas.ReceivePaymentBody, req.body));
    const payment = presentPayment(done.payment);
    return { status: 201, body: { payment, transaction_id: payment.transaction_id, invoice: presentInvoice(done.invoice, today(tenant)) } };
  });
  svc.handle("getArAging", async (req, ctx) => ({
    body: { aging: await arAging(deps, tenantOf(ctx.auth), parseOrThrow(schemas.AgingQuery, req.query, "query").as_of_date) },
  }));
  svc.handle("getApAging", async (req, ctx) => ({
    body: { aging: await apAging(deps, tenantOf(ctx.auth), parseOrThrow(schemas.AgingQuery, req.query, "query").as_of_date) },
  }));
  svc.handleInternal(
    schemas.MATCH_BANK_LINE_OPERATION,
    (payload) => parseOrThrow(schemas.MatchBankLineRequest, payload),
    async (req) => matchBankLine(deps, req),
  );
  svc.handlePage("page.invoice", (req) => invoicePage(deps, req));
}
