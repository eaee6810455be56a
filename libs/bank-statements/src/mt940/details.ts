import type { Counterparty } from "../core/types.ts";

export interface Details {
  description: string;
  counterparty: Counterparty;
  endToEndId?: string;
}

/** Field 86 in the German ZKA layout: a three-digit code, then `?NN` subfields. */
const ZKA_RE = /^\d{3}\?/;
/** Field 86 with SEPA keywords between slashes (Rabobank, ING, ABN AMRO's newer layout). */
const SLASH_CODES =
  /\/(EREF|KREF|MARF|CSID|CNTP|REMI|PURP|ORDP|BENM|ULTC|ULTD|NAME|ISDT|IBAN|BIC|ADDR|TRCD|BUSP|CDTRREFTP|CDTRREF|RTRN|ACCW|OCMT|CHGS|EXCH|PREF|SVCL)\//g;

function zka(text: string): Details {
  const parts = new Map<string, string>();
  for (const piece of text.slice(3).split("?").slice(1)) {
    const key = piece.slice(0, 2);
    parts.set(key, (parts.get(key) ?? "") + piece.slice(2));
  }
  const purposeKeys = ["20", "21", "22", "23", "24", "25", "26", "27", "28", "29", "60", "61", "62", "63"];
  const purpose = purposeKeys
    .map((k) => parts.get(k))
    .filter((v): v is string => v !== undefined && v.trim() !== "")
    .join(" ");
  const counterparty: Counterparty = {};
  const name = [parts.get("32"), parts.get("33")]
    .filter((v) => v !== undefined)
    .join("")
    .trim();
  if (name) counterparty.name = name;
  const account = parts.get("38")?.trim() || parts.get("31")?.trim();
  if (account) counterparty.account = account;
  const bank = parts.get("30")?.trim();
  if (bank) counterparty.bank_id = bank;
  return { description: purpose || (parts.get("00") ?? "").trim(), counterparty };
}

/**
 * The value without the slashes that close it. Counted back from the end: `/\/+$/` retried from every slash of
 * the value, quadratic in a value of slashes that do not end it.
 */
function withoutTrailingSlashes(value: string): string {
  let end = value.length;
  while (end > 0 && value.charCodeAt(end - 1) === 47) end--;
  return value.slice(0, end);
}

function slashCoded(text: string): Details | null {
  const marks = [...text.matchAll(SLASH_CODES)];
  if (marks.length === 0 || marks[0]?.index !== 0) return null;
  const values = new Map<string, string>();
  marks.forEach((m, i) => {
    const start = (m.index ?? 0) + m[0].length;
    const end = marks[i + 1]?.index ?? text.length;
    values.set(m[1] as string, withoutTrailingSlashes(text.slice(start, end)).trim());
  });
  const counterparty: Counterparty = {};
  const name = values.get("NAME");
  if (name) counterparty.name = name;
  const iban = values.get("IBAN");
  if (iban) counterparty.account = iban;
  const bic = values.get("BIC");
  if (bic) counterparty.bank_id = bic;
  const details: Details = { description: values.get("REMI") || text, counterparty };
  const eref = values.get("EREF");
  if (eref && eref !== "NOTPROVIDED") details.endToEndId = eref;
  return details;
}

/**
 * Field 86 (information to the account owner). SWIFT wraps it at 65 characters wherever the line is full, even
 * inside a word, so structured layouts are re-joined without a separator before their subfields are read;
 * free text is joined with spaces.
 */
export function readDetails(lines: readonly string[]): Details {
  const joined = lines
    .map((l) => l.trimEnd())
    .join("")
    .trim();
  if (ZKA_RE.test(joined)) return zka(joined);
  const coded = slashCoded(joined);
  if (coded) return coded;
  return {
    description: lines
      .map((l) => l.trim())
      .filter(Boolean)
      .join(" "),
    counterparty: {},
  };
}
