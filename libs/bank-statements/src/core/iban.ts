const IBAN_SHAPE = /^[A-Z]{2}\d{2}[A-Z0-9]{11,30}$/;

/** True for an IBAN whose ISO 13616 check digits are right (mod 97 = 1). */
export function hasIbanChecksum(text: string): boolean {
  if (!IBAN_SHAPE.test(text)) return false;
  const rearranged = text.slice(4) + text.slice(0, 4);
  let remainder = 0;
  for (const ch of rearranged) {
    const code = ch.charCodeAt(0);
    const digits = code >= 65 ? String(code - 55) : ch;
    for (const d of digits) remainder = (remainder * 10 + (d.charCodeAt(0) - 48)) % 97;
  }
  return remainder === 1;
}

/** Something shaped like an IBAN: country letters, two check digits, 11–30 letters and digits. */
export function looksLikeIban(text: string): boolean {
  return IBAN_SHAPE.test(text);
}

/**
 * The IBAN in an account field, allowing spaces and a trailing currency code (NL71RABO0123456789EUR). A valid
 * checksum wins; otherwise the IBAN shape is enough, because test and anonymised statements carry IBANs with
 * made-up check digits and the account is still identified by them.
 */
export function findIban(text: string): string | undefined {
  const compact = text.replace(/\s/g, "").toUpperCase();
  const withoutCurrency = /[A-Z]{3}$/.test(compact) ? compact.slice(0, -3) : undefined;
  if (hasIbanChecksum(compact)) return compact;
  if (withoutCurrency && hasIbanChecksum(withoutCurrency)) return withoutCurrency;
  if (withoutCurrency) return looksLikeIban(withoutCurrency) ? withoutCurrency : undefined;
  return looksLikeIban(compact) ? compact : undefined;
}
