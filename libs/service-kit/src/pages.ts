/**
 * The hosted pages' HTML (checkout, wallet, receipt, payout statement…): server-rendered plain strings, every
 * interpolated value escaped with `esc`. Each service keeps its own style sheet; the shell, the escaping and the
 * money format are these, once. The gateway's browser listener serves the answers (`{html}` or `{redirect}`).
 */

/** Escapes text for HTML content and quoted attribute values. */
export function esc(value: unknown): string {
  return String(value ?? "").replace(/[&<>"'`=]/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** Integer cents as dollars, exactly: no floating point on the way. */
export function usd(amountCents: number): string {
  const sign = amountCents < 0 ? "-" : "";
  const abs = Math.abs(amountCents);
  return `${sign}$${Math.floor(abs / 100).toLocaleString("en-US")}.${String(abs % 100).padStart(2, "0")}`;
}

/** A whole document: the page's title, its style sheet and the body inside `<main>`. Search engines keep out. */
export function htmlDocument(title: string, style: string, body: string): string {
  return (
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">` +
    `<meta name="robots" content="noindex"><title>${esc(title)}</title><style>${style}</style></head><body><main>${body}</main></body></html>`
  );
}

export interface HtmlAnswer {
  ok: true;
  status: number;
  body: { html: string };
}

export function htmlAnswer(status: number, title: string, style: string, body: string): HtmlAnswer {
  return { ok: true, status, body: { html: htmlDocument(title, style, body) } };
}

/** A 303 to `location` (after a form post). */
export function redirectAnswer(location: string): { ok: true; status: number; body: { redirect: string } } {
  return { ok: true, status: 303, body: { redirect: location } };
}
