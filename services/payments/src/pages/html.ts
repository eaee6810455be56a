/** Server-rendered HTML for the hosted pages: plain strings, every interpolated value escaped. */

export function esc(value: unknown): string {
  return String(value ?? "").replace(/[&<>"'`=]/g, (c) => `&#${c.charCodeAt(0)};`);
}

export function usd(amountCents: number): string {
  const sign = amountCents < 0 ? "-" : "";
  const abs = Math.abs(amountCents);
  return `${sign}$${Math.floor(abs / 100).toLocaleString("en-US")}.${String(abs % 100).padStart(2, "0")}`;
}

/** Sandbox test cards (docs/api.md, Checkout). */
export const TEST_CARD_SUCCESS = "4242424242424242";
export const TEST_CARD_DECLINE = "4000000000000002";

export function cardDigits(input: string | undefined): string {
  return (input ?? "").replace(/[\s-]/g, "");
}

const STYLE = `
body{font-family:system-ui,-apple-system,sans-serif;background:#f6f7f9;margin:0;color:#1a1f36}
main{max-width:440px;margin:48px auto;background:#fff;border-radius:12px;padding:32px;box-shadow:0 2px 12px rgba(0,0,0,.08)}
h1{font-size:20px;margin:0 0 4px}.muted{color:#697386}.amount{font-size:32px;font-weight:600;margin:16px 0}
label{display:block;margin:12px 0 4px;font-size:14px}input,select{width:100%;box-sizing:border-box;padding:10px;border:1px solid #cfd7df;border-radius:6px;font-size:16px}
button{margin-top:16px;width:100%;padding:12px;border:0;border-radius:6px;background:#635bff;color:#fff;font-size:16px;cursor:pointer}
button.secondary{background:#e3e8ee;color:#1a1f36}.error{color:#b3093c;background:#fde8ec;padding:10px;border-radius:6px}
.ok{color:#0e6245;background:#e5f7ee;padding:10px;border-radius:6px}.sandbox{background:#fff4d6;padding:8px;border-radius:6px;font-size:13px}
table{width:100%;border-collapse:collapse;font-size:14px}td,th{padding:6px 4px;border-bottom:1px solid #eef1f4;text-align:left}td.num{text-align:right}`;

export function layout(title: string, body: string): string {
  return (
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">` +
    `<meta name="robots" content="noindex"><title>${esc(title)}</title><style>${STYLE}</style></head><body><main>${body}</main></body></html>`
  );
}

export function page(status: number, title: string, body: string): { ok: true; status: number; body: { html: string } } {
  return { ok: true, status, body: { html: layout(title, body) } };
}

export function redirect(location: string): { ok: true; status: number; body: { redirect: string } } {
  return { ok: true, status: 303, body: { redirect: location } };
}
