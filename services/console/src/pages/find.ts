/**
 * Find any id: what `admin find` answers (the rows of every service the id leads to, the events, their
 * deliveries and the operator actions on them), each id a link to its own find page.
 */
import type { FindResult } from "@treasury/service-kit/operator-client";
import { html, type Html } from "../domain/html.ts";
import { BASE, notice, page, type Viewer } from "./layout.ts";
import { fields, table } from "./render.ts";

export function findForm(query: string): Html {
  return html`<form method="get" action="${BASE}/find" class="inline" role="search">
    <label for="find-id">Any id</label>
    <input id="find-id" name="id" value="${query}" required maxlength="255" placeholder="po_…, txn_…, kycs_…, a request id" />
    <button type="submit">Find</button>
  </form>`;
}

export function homePage(viewer: Viewer): string {
  return page({
    title: "Find",
    viewer,
    section: "find",
    body: html`${findForm("")}
      <p>
        A payout, transaction, checkout session, refund, KYC submission, org, key, event, delivery or request id: the console shows its path across the
        services, with links between ids.
      </p>`,
  });
}

const EVENT_COLUMNS = ["service", "id", "type", "org_id", "created_at", "published_at", "request_id", "data"] as const;

function eventsSection(events: FindResult["events"]): Html {
  const rows = events.map((e) => Object.fromEntries(EVENT_COLUMNS.map((c) => [c, e[c]])));
  const deliveries = events.flatMap((e) => (Array.isArray(e["deliveries"]) ? (e["deliveries"] as Record<string, unknown>[]) : []));
  return html`<h2>Events</h2>
    ${table("Events", rows)}${deliveries.length === 0
      ? ""
      : html`<h3>Webhook deliveries</h3>
          ${table("Webhook deliveries", deliveries)}`}`;
}

function summary(r: FindResult): Html {
  return fields({ kinds: r.kinds, org_ids: r.org_ids, request_ids: r.request_ids, trace_ids: r.trace_ids });
}

export function findPage(viewer: Viewer, r: FindResult): string {
  const sections: Html[] = Object.entries(r.rows).map(
    ([t, rows]) =>
      html`<h2>${t}</h2>
        ${table(t, rows)}`,
  );
  const body = html`${findForm(r.query)} ${r.found ? "" : notice("error", `Nothing holds ${r.query}.`)}
  ${r.truncated ? notice("error", "The path reached its bounds: some linked rows may be missing (find one of the ids shown to go on).") : ""}
  ${r.unanswered === undefined ? "" : notice("error", `Not answered by: ${r.unanswered.map((u) => u.service).join(", ")}; their rows are missing.`)}
  ${r.found
    ? html`${summary(r)}${sections}${eventsSection(r.events)}
        <h2>Operator actions</h2>
        ${table("Operator actions", r.audit as unknown as Record<string, unknown>[])}`
    : ""}`;
  return page({ title: `Find ${r.query}`, viewer, section: "find", body });
}
