/** The operator actions every service recorded (`audit list`), newest first, filtered by id or action. */
import type { AuditEntry } from "@treasury/contracts";
import { html } from "../domain/html.ts";
import { BASE, notice, page, type Viewer } from "./layout.ts";
import { table } from "./render.ts";

export function auditPage(viewer: Viewer, filter: { target: string; action: string }, entries: AuditEntry[], unanswered: string[]): string {
  const body = html`<form method="get" action="${BASE}/audit" class="inline">
      <label for="audit-target">Id</label><input id="audit-target" name="target" value="${filter.target}" maxlength="255" />
      <label for="audit-action">Action</label
      ><input id="audit-action" name="action" value="${filter.action}" maxlength="64" placeholder="kyc or kyc.approve" /> <button type="submit">Filter</button>
    </form>
    ${unanswered.length === 0 ? "" : notice("error", `Not answered by: ${unanswered.join(", ")}.`)}
    ${table("Operator actions", entries as unknown as Record<string, unknown>[])}`;
  return page({ title: "Audit log", viewer, section: "audit", body });
}
