/**
 * Values of the services' answers as HTML: every id the platform hands out becomes a link to its find page (the
 * money path can be followed by clicking), amounts in cents are shown as money, times as <time> elements the
 * console's script shows in the operator's own zone. Rows become tables in a scrollable, focusable region.
 */
import { classify } from "@treasury/service-kit/operator-client";
import { html, type Html } from "../domain/html.ts";
import { BASE } from "./layout.ts";

const ISO_TIME_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
/** Nested values deeper than this are shown as JSON: a page stays readable. */
const DEPTH_MAX = 2;
const TABLE_ROWS_MAX = 200;

/** 123456 cents → "1,234.56" (the currency, where known, is shown beside it by the caller). */
export function formatCents(cents: number | bigint | string): string {
  const n = BigInt(cents);
  const sign = n < 0n ? "-" : "";
  const abs = n < 0n ? -n : n;
  const units = (abs / 100n).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  return `${sign}${units}.${(abs % 100n).toString().padStart(2, "0")}`;
}

function isCentsKey(key: string | undefined): boolean {
  return key !== undefined && (key.endsWith("_cents") || key === "amount" || key === "cents");
}

/** An id find recognises by its form (not the client-chosen ones, which would make every word a link). */
function isLinkableId(text: string): boolean {
  if (text.length > 255 || /\s/.test(text)) return false;
  return classify(text).some((k) => k !== "participant" && k !== "sale" && k !== "ledger_reference");
}

export function idLink(id: string): Html {
  return html`<a class="id" href="${BASE}/find?id=${encodeURIComponent(id)}">${id}</a>`;
}

function scalar(value: string | number | boolean, key: string | undefined): Html {
  if (typeof value === "number" && isCentsKey(key) && Number.isSafeInteger(value)) return html`<span class="money">${formatCents(value)}</span>`;
  if (typeof value === "string" && isCentsKey(key) && /^-?\d{1,18}$/.test(value)) return html`<span class="money">${formatCents(value)}</span>`;
  if (typeof value !== "string") return html`${String(value)}`;
  if (ISO_TIME_RE.test(value)) return html`<time datetime="${value}">${value}</time>`;
  if (isLinkableId(value)) return idLink(value);
  return html`${value}`;
}

export function value(v: unknown, key?: string, depth = 0): Html {
  if (v === null || v === undefined) return html`<span class="muted">—</span>`;
  if (v instanceof Date) return scalar(v.toISOString(), key);
  if (typeof v === "string" || typeof v === "number" || typeof v === "boolean") return scalar(v, key);
  if (typeof v === "bigint") return scalar(v.toString(), key);
  if (depth >= DEPTH_MAX) return html`<code class="json">${JSON.stringify(v)}</code>`;
  if (Array.isArray(v)) {
    if (v.length === 0) return html`<span class="muted">none</span>`;
    return html`<ul class="plain">
      ${v.map((item) => html`<li>${value(item, key, depth + 1)}</li>`)}
    </ul>`;
  }
  return fields(v as Record<string, unknown>, depth + 1);
}

/** An object as a definition list. */
export function fields(row: Record<string, unknown>, depth = 0): Html {
  const items = Object.entries(row).map(
    ([k, v]) =>
      html`<div>
        <dt>${k}</dt>
        <dd>${value(v, k, depth)}</dd>
      </div>`,
  );
  return html`<dl class="fields">${items}</dl>`;
}

/** Rows as a table with the union of their columns, in a region that scrolls sideways on a narrow screen. */
export function table(label: string, rows: readonly Record<string, unknown>[], actions?: (row: Record<string, unknown>) => Html): Html {
  if (rows.length === 0) return html`<p class="muted">None.</p>`;
  const shown = rows.slice(0, TABLE_ROWS_MAX);
  const columns = [...new Set(shown.flatMap((r) => Object.keys(r)))];
  // Actions come first: on a narrow screen they are in view without scrolling the table sideways.
  const head = html`<tr>
    ${actions === undefined ? "" : html`<th scope="col">actions</th>`}${columns.map((c) => html`<th scope="col">${c}</th>`)}
  </tr>`;
  const body = shown.map(
    (r) =>
      html`<tr>
        ${actions === undefined ? "" : html`<td>${actions(r)}</td>`}${columns.map((c) => html`<td>${value(r[c], c, 1)}</td>`)}
      </tr>`,
  );
  return html`<div class="scroll" role="region" aria-label="${label}" tabindex="0">
    <table>
      <caption>
        ${label}
      </caption>
      <thead>
        ${head}
      </thead>
      <tbody>
        ${body}
      </tbody>
    </table>
  </div>`;
}
