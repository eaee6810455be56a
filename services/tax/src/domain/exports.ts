/**
 * A year's export as a job (usecases/exports.ts): its format, where it stands, and the parts it was cut into.
 * A part is at most the largest API answer; the parts joined in order are the file.
 */
import type { schemas, Tenant } from "@treasury/contracts";

export interface TaxExport {
  id: string;
  tenant: Tenant;
  taxYear: number;
  format: schemas.ExportFormat;
  status: "running" | "succeeded";
  parts: number;
  bytes: number;
  lastError: string | null;
  createdAt: Date;
  finishedAt: Date | null;
}

export function presentExport(e: TaxExport) {
  return {
    id: e.id,
    object: "tax_export",
    tax_year: e.taxYear,
    format: e.format,
    status: e.status,
    parts: e.parts,
    bytes: e.bytes,
    last_error: e.lastError,
    created_at: e.createdAt.toISOString(),
    finished_at: e.finishedAt?.toISOString() ?? null,
  };
}

/**
 * Cuts text into pieces of at most `maxBytes` UTF-8 bytes, never inside a character: the first piece, and the
 * rest to carry into the next part.
 */
export function cutAt(text: string, maxBytes: number): [string, string] {
  if (Buffer.byteLength(text) <= maxBytes) return [text, ""];
  let n = Math.min(text.length, maxBytes);
  while (Buffer.byteLength(text.slice(0, n)) > maxBytes) n -= Math.max(1, Math.ceil((Buffer.byteLength(text.slice(0, n)) - maxBytes) / 4));
  // A surrogate pair is one character: never split it.
  const code = text.charCodeAt(n - 1);
  if (code >= 0xd800 && code <= 0xdbff) n -= 1;
  return [text.slice(0, n), text.slice(n)];
}
