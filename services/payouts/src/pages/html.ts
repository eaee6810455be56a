/** The hosted statement page's style (a phone's width without sideways scrolling); the shell, escaping and money format are the kit's (service-kit pages.ts). */
import { htmlAnswer, htmlDocument, type HtmlAnswer } from "@treasury/service-kit";

export { esc, usd } from "@treasury/service-kit";

const STYLE = `
body{font-family:system-ui,-apple-system,sans-serif;background:#f6f7f9;margin:0;color:#1a1f36}
main{max-width:760px;margin:48px auto;background:#fff;border-radius:12px;padding:32px;box-shadow:0 2px 12px rgba(0,0,0,.08)}
h1{font-size:20px;margin:0 0 4px}.muted{color:#697386}
table{width:100%;border-collapse:collapse;font-size:14px;margin-top:16px}caption{text-align:left;font-weight:600;padding-bottom:8px}
td,th{padding:6px 4px;border-bottom:1px solid #eef1f4;text-align:left;vertical-align:top}.num{text-align:right;font-variant-numeric:tabular-nums}
code{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px;overflow-wrap:anywhere}
.sandbox{background:#fff4d6;padding:8px;border-radius:6px;font-size:13px}
@page{margin:16mm}
@media (max-width:600px){main{margin:0;border-radius:0;padding:16px 12px}table{font-size:13px;table-layout:fixed}td,th{padding:6px 2px;overflow-wrap:anywhere}}
@media print{body{background:#fff}main{box-shadow:none;border-radius:0;margin:0;max-width:none;padding:0}}`;

export function layout(title: string, body: string): string {
  return htmlDocument(title, STYLE, body);
}

export function page(status: number, title: string, body: string): HtmlAnswer {
  return htmlAnswer(status, title, STYLE, body);
}
