/**
 * The recipient copy (Copy B) as PDF, drawn with pdfkit (a maintained PDF library; its standard Helvetica needs no
 * font files). It shows what the recipient needs to file: the payer, the recipient with the TIN masked to its last
 * four digits (the full TIN never reaches this code), the form's boxes and, for a 1099-K, the twelve months.
 */
import PDFDocument from "pdfkit";
import { amountsOf } from "../domain/documents.ts";
import type { PdfRenderer, RecipientCopy } from "../usecases/ports.ts";

const MONTH_NAMES = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];

/** Cents as dollars with thousands separators: 123456 → "$1,234.56". */
export function dollars(cents: number): string {
  const sign = cents < 0 ? "-" : "";
  const abs = Math.abs(cents);
  const whole = Math.floor(abs / 100).toLocaleString("en-US");
  return `${sign}$${whole}.${String(abs % 100).padStart(2, "0")}`;
}

function maskedTin(c: RecipientCopy): string {
  const last4 = c.recipient.tinLast4;
  if (last4 === null) return "not provided";
  return c.recipient.tinType === "ein" ? `**-***${last4}` : `***-**-${last4}`;
}

function boxes(c: RecipientCopy): [string, string][] {
  const d = c.document;
  const a = amountsOf(d) as Record<string, unknown>;
  if (d.form === "1099-NEC") return [["1 Nonemployee compensation", dollars(Number(a["box_1_cents"]))]];
  const rows: [string, string][] = [
    ["1a Gross amount of payment card/third party network transactions", dollars(d.grossCents)],
    ["3 Number of payment transactions", String(d.transactionCount)],
  ];
  d.monthlyCents.forEach((m, i) => rows.push([`5${String.fromCharCode(97 + i)} ${MONTH_NAMES[i] ?? ""}`, dollars(m)]));
  return rows;
}

function draw(doc: PDFKit.PDFDocument, c: RecipientCopy): void {
  const d = c.document;
  doc.font("Helvetica-Bold").fontSize(16).text(`Form ${d.form} ${d.taxYear}`, { continued: false });
  if (d.corrects !== null) doc.fontSize(12).text("CORRECTED");
  doc.font("Helvetica").fontSize(10).text("Copy B - For Recipient. This is important tax information and is being furnished to the IRS.");
  doc.moveDown();
  doc.font("Helvetica-Bold").text("PAYER").font("Helvetica");
  doc.text(c.payer.name).text(c.payer.address).text(`${c.payer.city}, ${c.payer.state} ${c.payer.zip}`).text(`Payer's TIN: ${c.payer.tin}`);
  doc.moveDown();
  doc.font("Helvetica-Bold").text("RECIPIENT").font("Helvetica");
  doc.text(c.recipient.name);
  const addr = c.recipient.address;
  if (addr !== null) doc.text([addr.line1, addr.line2].filter(Boolean).join(", ")).text(`${addr.city}, ${addr.state} ${addr.postal_code}`);
  doc.text(`Recipient's TIN: ${maskedTin(c)}`).text(`Account number: ${d.participantId}`);
  doc.moveDown();
  for (const [label, value] of boxes(c)) {
    const y = doc.y;
    doc.text(label, 50, y, { width: 380 });
    doc.text(value, 440, y, { width: 120, align: "right" });
  }
  doc.moveDown().fontSize(8).text(`Document ${d.id}. Figures from the ledger as of December 31, ${d.taxYear} (UTC).`, 50);
}

export function pdfkitRenderer(): PdfRenderer {
  return {
    recipientCopy(c) {
      return new Promise<Buffer>((resolve, reject) => {
        // The document's own time, not now: the same document renders to the same file.
        const doc = new PDFDocument({
          size: "LETTER",
          margin: 50,
          info: { Title: `Form ${c.document.form} ${c.document.taxYear}`, CreationDate: c.document.updatedAt },
        });
        const chunks: Buffer[] = [];
        doc.on("data", (b: Buffer) => chunks.push(b));
        doc.on("end", () => resolve(Buffer.concat(chunks)));
        doc.on("error", reject);
        draw(doc, c);
        doc.end();
      });
    },
  };
}
