/**
 * Risk reviews (the movements risk held for an operator: `risk list|approve|deny`) and the platform's checks (the
 * ledger's invariants, `ledger verify`; the receipt chains' audit, `receipts audit-chains`).
 */
import { html, type Html } from "../domain/html.ts";
import { may } from "../domain/roles.ts";
import { actionForm } from "./forms.ts";
import { BASE, notice, page, type Viewer } from "./layout.ts";
import { fields, table } from "./render.ts";

export const RISK_STATUSES = ["pending", "approved", "denied"] as const;

function statusFilter(status: string): Html {
  const options = RISK_STATUSES.map((s) => html`<option value="${s}" ${s === status ? html` selected` : ""}>${s}</option>`);
  return html`<form method="get" action="${BASE}/risk" class="inline">
    <label for="risk-status">Status</label>
    <select id="risk-status" name="status">
      ${options}</select
    ><button type="submit">Show</button>
  </form>`;
}

function decisionForms(viewer: Viewer): ((row: Record<string, unknown>) => Html) | undefined {
  if (!may(viewer.role, "review")) return undefined;
  return (row) => {
    const review = row["review"] as { status?: string } | null | undefined;
    if (review?.status !== "pending") return html`<span class="muted">decided</span>`;
    const action = `${BASE}/risk/${String(row["id"])}/decide`;
    return html`<div class="actions">
      ${actionForm(viewer, { action, label: "Approve", reason: "required", hidden: { decision: "approve" } })}
      ${actionForm(viewer, { action, label: "Deny", reason: "required", hidden: { decision: "deny" }, danger: true })}
    </div>`;
  };
}

export function riskQueuePage(viewer: Viewer, status: string, evaluations: Record<string, unknown>[], done: string | undefined): string {
  const body = html`${done === undefined ? "" : notice("ok", `Recorded: ${done}.`)}${statusFilter(status)}
  ${table(`Risk reviews ${status}`, evaluations, decisionForms(viewer))}`;
  return page({ title: "Risk reviews", viewer, section: "risk", body });
}

export function checksPage(viewer: Viewer, result?: { title: string; ok: boolean; body: Record<string, unknown> }): string {
  const forms = html`<div class="actions">
    ${actionForm(viewer, { action: `${BASE}/checks/ledger`, label: "Verify the ledger's invariants", reason: "none" })}
    ${actionForm(viewer, { action: `${BASE}/checks/receipts`, label: "Audit the receipt chains", reason: "none" })}
  </div>`;
  const shown =
    result === undefined
      ? ""
      : html`<h2>${result.title}</h2>
          ${notice(result.ok ? "ok" : "error", result.ok ? "Every check passed." : "A check failed: see below.")}${fields(result.body)}`;
  return page({ title: "Checks", viewer, section: "checks", body: html`${forms}${shown}` });
}
