/**
 * An org and its API keys (what find answers for an org id: the gateway's row and its newest keys, never a key's
 * hash), with the admin's actions: suspend or activate the org, create a key, revoke a key.
 */
import type { FindResult } from "@treasury/service-kit/operator-client";
import { html, type Html } from "../domain/html.ts";
import { may } from "../domain/roles.ts";
import { actionForm } from "./forms.ts";
import { BASE, notice, page, type Viewer } from "./layout.ts";
import { table } from "./render.ts";

function orgForm(org: string): Html {
  return html`<form method="get" action="${BASE}/orgs" class="inline">
    <label for="org-id">Org id</label> <input id="org-id" name="org" value="${org}" required maxlength="255" placeholder="org_…" /><button type="submit">
      Open
    </button>
  </form>`;
}

export function orgsIndexPage(viewer: Viewer): string {
  return page({ title: "Orgs and keys", viewer, section: "orgs", body: orgForm("") });
}

function orgActions(viewer: Viewer, orgId: string): Html {
  if (!may(viewer.role, "manage")) return html``;
  const envOptions = html`<label for="key-env">Environment</label
    ><select id="key-env" name="env">
      <option value="test">test</option>
      <option value="live">live</option>
    </select>
    <label for="key-scopes">Scopes (optional, comma-separated)</label><input id="key-scopes" name="scopes" maxlength="200" placeholder="read,payments" />`;
  return html`<h2>Manage</h2>
    <div class="actions">
      ${actionForm(viewer, { action: `${BASE}/orgs/${orgId}/keys`, label: "Create key", reason: "optional", extra: envOptions })}
      ${actionForm(viewer, { action: `${BASE}/orgs/${orgId}/status`, label: "Suspend org", reason: "required", hidden: { status: "suspend" }, danger: true })}
      ${actionForm(viewer, { action: `${BASE}/orgs/${orgId}/status`, label: "Activate org", reason: "required", hidden: { status: "activate" } })}
    </div>`;
}

function keyActions(viewer: Viewer): ((row: Record<string, unknown>) => Html) | undefined {
  if (!may(viewer.role, "manage")) return undefined;
  return (row) =>
    row["revoked_at"] !== null && row["revoked_at"] !== undefined
      ? html`<span class="muted">revoked</span>`
      : actionForm(viewer, {
          action: `${BASE}/keys/${String(row["id"])}/revoke`,
          label: "Revoke",
          reason: "required",
          hidden: { org: String(row["org_id"]) },
          danger: true,
        });
}

export function orgPage(viewer: Viewer, orgId: string, found: FindResult, message?: Html): string {
  const orgs = found.rows["gateway.orgs"] ?? [];
  const keys = found.rows["gateway.api_keys"] ?? [];
  const body = html`${orgForm(orgId)}${message ?? ""}
  ${orgs.length === 0
    ? notice("error", `No org ${orgId}.`)
    : html`${table("Org", orgs)}
        <h2>API keys</h2>
        ${table("API keys", keys, keyActions(viewer))}${orgActions(viewer, orgId)}`}`;
  return page({ title: `Org ${orgId}`, viewer, section: "orgs", body });
}

/** The new key, shown once: the gateway keeps only its hash. */
export function keyCreatedNotice(created: Record<string, unknown>): Html {
  return html`<div class="notice ok" role="status">
    <p>Key ${String(created["key_id"])} created. Copy it now; it is not shown again:</p>
    <p><code class="secret">${String(created["api_key"])}</code></p>
  </div>`;
}
