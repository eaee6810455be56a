import { StatementError } from "./errors.ts";
import type { StatementFormat } from "./types.ts";

/** Detection reads only the start of a file: enough for any header, never the whole of a large one. */
const HEAD_CHARS = 8192;

const CAMT053_NS = /urn:iso:std:iso:20022:tech:xsd:camt\.053\.001\.(\d\d)/;

/**
 * The format of a statement, from its content only (never a file name):
 * XML with a camt.053 namespace → camt053; an OFX header or root (SGML 1.x or XML 2.x) → ofx, or qfx when it
 * carries Intuit fields (`<INTU.…>`); a BAI2 file header record (`01,sender,receiver,YYMMDD,HHMM,`) → bai2; SWIFT blocks or `:20:` with `:25:`/`:60` tags
 * → mt940; anything else → csv. XML that is neither OFX nor camt.053 is refused rather than read as CSV.
 */
export function detectFormat(text: string): StatementFormat {
  const head = stripLeadingNoise(text.slice(0, HEAD_CHARS));
  if (/^OFXHEADER\s*:/i.test(head) || /<\?OFX\b/i.test(head) || /^<OFX>/i.test(head)) {
    return /<INTU\./i.test(text) ? "qfx" : "ofx";
  }
  if (head.startsWith("<")) return detectXml(head);
  if (/^01,[^,\r\n]*,[^,\r\n]*,\d{6},\d{4},/.test(head)) return "bai2";
  if (/^\{1:/.test(head) || (/^:20:/m.test(head) && /^:(25|60[FM]):/m.test(head))) return "mt940";
  return "csv";
}

function detectXml(head: string): StatementFormat {
  if (/<OFX>/i.test(head)) return "ofx";
  if (CAMT053_NS.test(head)) return "camt053";
  const ns = /xmlns(?::\w+)?="([^"]*)"/.exec(head)?.[1];
  throw new StatementError("unsupported_format", `XML document is not a camt.053 statement or OFX${ns ? ` (namespace ${ns})` : ""}`, {
    line: 1,
    ...(ns ? { value: ns } : {}),
  });
}

/** Byte-order marks, control bytes (SWIFT SOH) and blank lines before the first real character. */
function stripLeadingNoise(head: string): string {
  let i = 0;
  while (i < head.length) {
    const c = head.charCodeAt(i);
    if (c === 0xfeff || c <= 0x20) i++;
    else break;
  }
  return head.slice(i);
}

/** The camt.053 schema version ("02", "04", "08"…) named by the document's namespace, or null. */
export function camtVersion(head: string): string | null {
  return CAMT053_NS.exec(head)?.[1] ?? null;
}
