/**
 * KYC review: the queue by status (no personal data), a submission's page (its rows from find, no personal data)
 * with "reveal" (a reason required; the kyc service opens the data and records the view) and the decisions.
 */
import type { FindResult } from "@treasury/service-kit/operator-client";
import { html, type Html } from "../domain/html.ts";
import { may } from "../domain/roles.ts";
import { actionForm } from "./forms.ts";
import { BASE, notice, page, type Viewer } from "./layout.ts";
import { fields, idLink, table } from "./render.ts";

export const KYC_STATUSES = ["pending", "under_review", "approved", "rejected", "suspended"] as const;
export const KYC_DECISIONS = ["approve", "reject", "suspend"] as const;
export type KycDecision = (typeof KYC_DECISIONS)[number];

export interface KycFilter {
  status: string;
  org: string;
  subject: string;
}

function queueFilter(f: KycFilter): Html {
  const options = KYC_STATUSES.map((s) => html`<option value="${s}" ${s === f.status ? html` selected` : ""}>${s}</option>`);
  const subjects = ["", "business", "creator"].map(
    (s) => html`<option value="${s}" ${s === f.subject ? html` selected` : ""}>${s === "" ? "any" : s}</option>`,
  );
  return html`<form method="get" action="${BASE}/kyc" class="inline">
    <label for="kyc-status">Status</label>
    <select id="kyc-status" name="status">
      ${options}
    </select>
    <label for="kyc-subject">Subject</label
    ><select id="kyc-subject" name="subject">
      ${subjects}
    </select>
    <label for="kyc-org">Org</label><input id="kyc-org" name="org" value="${f.org}" maxlength="255" placeholder="org_… (any)" />
    <button type="submit">Show</button>
  </form>`;
}

export function kycQueuePage(viewer: Viewer, filter: KycFilter, verifications: Record<string, unknown>[]): string {
  const open = (r: Record<string, unknown>) => (typeof r["submission_id"] === "string" ? html`<a href="${BASE}/kyc/${r["submission_id"]}">Open</a>` : html``);
  return page({
    title: "KYC reviews",
    viewer,
    section: "kyc",
    body: html`${queueFilter(filter)}${table(`Verifications ${filter.status}`, verifications, open)}`,
  });
}

function decisions(viewer: Viewer, id: string): Html {
  if (!may(viewer.role, "review")) return html`<p class="muted">Your role reads reviews; a reviewer decides them.</p>`;
  const forms = KYC_DECISIONS.map((d) =>
    actionForm(viewer, {
      action: `${BASE}/kyc/${id}/decide`,
      label: d[0]?.toUpperCase() + d.slice(1),
      reason: d === "approve" ? "optional" : "required",
      hidden: { decision: d },
      danger: d !== "approve",
    }),
  );
  return html`<h2>Decide</h2>
    <div class="actions">${forms}</div>`;
}

function revealForm(viewer: Viewer, id: string): Html {
  if (!may(viewer.role, "review")) return html``;
  return html`<h2>Personal data</h2>
    <p>Hidden until revealed: the view is recorded with your reason.</p>
    ${actionForm(viewer, {
      action: `${BASE}/kyc/${id}/reveal`,
      label: "Reveal personal data",
      reason: "required",
    })}`;
}

export function kycSubmissionPage(viewer: Viewer, id: string, found: FindResult, done: string | undefined): string {
  const rows = Object.entries(found.rows).filter(([t]) => t.startsWith("kyc."));
  const body = html`${done === undefined ? "" : notice("ok", `Recorded: ${done}.`)}
    <p>Submission ${idLink(id)}</p>
    ${rows.length === 0
      ? notice("error", `No KYC submission ${id}.`)
      : rows.map(
          ([t, r]) =>
            html`<h2>${t}</h2>
              ${table(t, r)}`,
        )}
    ${revealForm(viewer, id)}${decisions(viewer, id)}`;
  return page({ title: "KYC submission", viewer, section: "kyc", body });
}

export function kycRevealedPage(viewer: Viewer, id: string, shown: Record<string, unknown>): string {
  const body = html`${notice("ok", "Personal data revealed; the view is recorded with your reason.")}
    <p>Submission ${idLink(id)} · <a href="${BASE}/kyc/${id}">Hide</a></p>
    ${fields(shown)}${decisions(viewer, id)}`;
  return page({ title: "KYC submission (revealed)", viewer, section: "kyc", body });
}
