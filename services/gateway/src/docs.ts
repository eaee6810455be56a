/** A human page for the OpenAPI document: every operation with its scope, rate class and body fields. */

const esc = (s: unknown) => String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

interface Op {
  operationId?: string;
  summary?: string;
  "x-required-scope"?: string | null;
  "x-rate-limit-class"?: string;
  requestBody?: { content: { "application/json": { schema: { properties?: Record<string, unknown>; required?: string[] } } } };
}

export function renderDocsPage(doc: Record<string, unknown>): string {
  const paths = doc.paths as Record<string, Record<string, Op>>;
  const rows: string[] = [];
  for (const [path, methods] of Object.entries(paths)) {
    for (const [method, op] of Object.entries(methods)) {
      const schema = op.requestBody?.content["application/json"].schema;
      const required = new Set(schema?.required ?? []);
      const fields = Object.keys(schema?.properties ?? {})
        .map((f) => (required.has(f) ? `<b>${esc(f)}*</b>` : esc(f)))
        .join(", ");
      rows.push(
        `<tr><td><code>${esc(method.toUpperCase())}</code></td><td><code>${esc(path)}</code></td><td>${esc(op.operationId ?? "")}</td><td>${esc(op.summary ?? "")}</td><td>${esc(op["x-required-scope"] ?? "none")}</td><td>${esc(op["x-rate-limit-class"] ?? "")}</td><td>${fields}</td></tr>`,
      );
    }
  }
  const info = doc.info as { title: string; version: string };
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${esc(info.title)}</title>
<style>body{font-family:system-ui,sans-serif;margin:2rem;color:#222}table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.35rem .5rem;text-align:left;vertical-align:top;font-size:.9rem}code{background:#f4f4f4;padding:0 .2rem}</style>
</head><body><h1>${esc(info.title)}</h1><p>Version ${esc(info.version)}. Every request carries <code>x-api-key</code> unless its scope is "none". Amounts are integer cents. Machine-readable: <a href="/v1/openapi.json">/v1/openapi.json</a>. Fields in bold with * are required.</p>
<table><thead><tr><th>Method</th><th>Path</th><th>Operation</th><th>Summary</th><th>Scope</th><th>Rate class</th><th>Body fields</th></tr></thead><tbody>${rows.join("")}</tbody></table></body></html>`;
}
