/** The hosted receipt page's style; the shell, escaping and money format are the kit's (service-kit pages.ts). */
import { htmlAnswer, htmlDocument, type HtmlAnswer } from "@treasury/service-kit";

export { esc, usd } from "@treasury/service-kit";

// Printing drops the card look (shadow, background, margins) and the on-screen hints, keeps every fact, and
// lets long hashes wrap instead of running off the page.
const STYLE = `
body{font-family:system-ui,-apple-system,sans-serif;background:#f6f7f9;margin:0;color:#1a1f36}
main{max-width:560px;margin:48px auto;background:#fff;border-radius:12px;padding:32px;box-shadow:0 2px 12px rgba(0,0,0,.08)}
h1{font-size:20px;margin:0 0 4px}h2{font-size:15px;margin:24px 0 8px}.muted{color:#697386}.amount{font-size:32px;font-weight:600;margin:16px 0}
table{width:100%;border-collapse:collapse;font-size:14px}td,th{padding:6px 4px;border-bottom:1px solid #eef1f4;text-align:left;vertical-align:top}th{width:36%}td.num{text-align:right}
code{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px;overflow-wrap:anywhere;word-break:break-all}
.sandbox{background:#fff4d6;padding:8px;border-radius:6px;font-size:13px}.screen-only{font-size:13px}
@page{margin:16mm}
@media print{body{background:#fff}main{box-shadow:none;border-radius:0;margin:0;max-width:none;padding:0}.screen-only{display:none}a{color:inherit;text-decoration:none}}`;

export function layout(title: string, body: string): string {
  return htmlDocument(title, STYLE, body);
}

export function page(status: number, title: string, body: string): HtmlAnswer {
  return htmlAnswer(status, title, STYLE, body);
}
