/** The recipient copy of a document as PDF: the form's boxes, the payer, and the recipient with the TIN's last four only. */
import type { Tenant } from "@treasury/contracts";
import { getDocument } from "./documents.ts";
import type { TaxDeps } from "./ports.ts";

/** Errors: tax_document_not_found. */
export async function recipientCopyPdf(
  deps: Pick<TaxDeps, "documents" | "profiles" | "pdf" | "filer">,
  tenant: Tenant,
  id: string,
): Promise<{ pdf: Buffer; filename: string }> {
  const document = await getDocument(deps, tenant, id);
  const profile = await deps.profiles.get(tenant, document.participantId);
  const pdf = await deps.pdf.recipientCopy({
    document,
    recipient: {
      name: profile?.legalName ?? document.participantId,
      tinType: profile?.tinType ?? null,
      tinLast4: document.recipientTinLast4,
      address: profile?.address ?? null,
    },
    payer: deps.filer.payer,
  });
  return { pdf, filename: `${document.form}-${document.taxYear}-${document.id}.pdf` };
}
