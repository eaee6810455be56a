/** The checkout and wallet pages' style and form helpers; the shell, escaping and money format are the kit's. */
import { htmlAnswer, htmlDocument, type HtmlAnswer } from "@treasury/service-kit";

export { esc, redirectAnswer as redirect, usd } from "@treasury/service-kit";

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
  return htmlDocument(title, STYLE, body);
}

export function page(status: number, title: string, body: string): HtmlAnswer {
  return htmlAnswer(status, title, STYLE, body);
}
