/**
 * Creating an invoice: a draft whose line amounts and total we compute (quantity × unit price, exact cents; the
 * client's totals are never read), numbered in the same transaction that stores it (`INV-000001`, per org and
 * environment, without gaps). Nothing is posted until it is sent.
 *
 * Errors: validation_error (due_date before issue_date), invoice_line_items_required, invalid_quantity,
 * amount_too_large, duplicate_reference_id (with the existing invoice), idempotency_conflict.
 */
import { DomainError, type schemas, type Tenant } from "@treasury/contracts";
import { requestHash } from "@treasury/service-kit";
import { dayOf, hostedUrl, presentInvoice, priceLines, type Invoice } from "../domain/invoice.ts";
import type { InvoicingDeps } from "./ports.ts";

function replay(existing: Invoice, hash: string, today: string): never {
  if (existing.request_hash !== hash) {
    throw new DomainError("idempotency_conflict", `reference_id ${existing.reference_id ?? ""} was used for a different invoice`, {
      hint: "Use a new reference_id for a different invoice; repeat the same body to read the first one",
    });
  }
  throw new DomainError("duplicate_reference_id", `An invoice with reference_id ${existing.reference_id ?? ""} exists`, {
    hint: `GET /v1/invoices/${existing.id} reads it`,
    extra: { invoice: presentInvoice(existing, today) },
  });
}

export async function createInvoice(
  deps: Pick<InvoicingDeps, "invoices" | "now" | "newId">,
  tenant: Tenant,
  body: schemas.CreateInvoiceBody,
  altBaseUrl: string,
): Promise<Invoice> {
  const { lines, total } = priceLines(body.line_items);
  const today = dayOf(deps.now(tenant));
  const issue = body.issue_date ?? today;
  const due = body.due_date ?? issue;
  if (due < issue) {
    throw new DomainError("validation_error", "due_date is before issue_date", { details: [{ path: "due_date", message: "must not be before issue_date" }] });
  }
  const hash = requestHash(body);
  const reference = body.reference_id ?? null;
  if (reference !== null) {
    const existing = await deps.invoices.findByReference(tenant, reference);
    if (existing !== undefined) replay(existing, hash, today);
  }
  const id = deps.newId("invoice");
  const created = await deps.invoices.create(
    tenant,
    {
      id,
      customer_name: body.customer_name,
      customer_email: body.customer_email ?? null,
      customer_id: body.customer_id ?? null,
      customer_address: body.customer_address ?? null,
      issue_date: issue,
      due_date: due,
      notes: body.notes ?? null,
      terms: body.terms ?? null,
      reference_id: reference,
      request_hash: hash,
      metadata: body.metadata ?? {},
      total_cents: total,
      hosted_url: hostedUrl(altBaseUrl, id),
      lines,
    },
    (inv) => [{ type: "invoice.created", data: { invoice: presentInvoice(inv, today) } }],
  );
  if (created !== undefined) return created;
  // A concurrent create took the reference_id between the look-up and the insert.
  const raced = reference === null ? undefined : await deps.invoices.findByReference(tenant, reference);
  if (raced === undefined) throw new Error("invoice insert refused without a conflicting reference_id");
  return replay(raced, hash, today);
}
