/**
 * The frame of every console page: a skip link, the navigation (what the operator's role may use), the signed-in
 * operator with the sign-out form, and the page's own content. Styles and scripts come from /console/assets only.
 */
import { may, type Role } from "../domain/roles.ts";
import { html, type Html } from "../domain/html.ts";

export const BASE = "/console";

export interface Viewer {
  email: string;
  role: Role;
  csrfToken: string;
}

export interface PageOptions {
  title: string;
  viewer?: Viewer | undefined;
  /** The navigation entry this page belongs to. */
  section?: string | undefined;
  body: Html;
}

const NAV: Array<{ href: string; label: string; section: string; permission: "read" | "review" | "manage" }> = [
  { href: `${BASE}`, label: "Find", section: "find", permission: "read" },
  { href: `${BASE}/kyc`, label: "KYC reviews", section: "kyc", permission: "read" },
  { href: `${BASE}/risk`, label: "Risk reviews", section: "risk", permission: "read" },
  { href: `${BASE}/orgs`, label: "Orgs and keys", section: "orgs", permission: "read" },
  { href: `${BASE}/payouts`, label: "Payouts", section: "payouts", permission: "manage" },
  { href: `${BASE}/audit`, label: "Audit log", section: "audit", permission: "read" },
  { href: `${BASE}/checks`, label: "Checks", section: "checks", permission: "read" },
];

function nav(viewer: Viewer, section: string | undefined): Html {
  const items = NAV.filter((n) => may(viewer.role, n.permission)).map(
    (n) => html`<li><a href="${n.href}" ${n.section === section ? html` aria-current="page"` : ""}>${n.label}</a></li>`,
  );
  return html`<nav aria-label="Console">
    <ul>
      ${items}
    </ul>
  </nav>`;
}

/** A hidden field with the session's CSRF token: every form that changes something carries it. */
export function csrfField(viewer: Viewer): Html {
  return html`<input type="hidden" name="_csrf" value="${viewer.csrfToken}" />`;
}

function header(viewer: Viewer | undefined, section: string | undefined): Html {
  const who =
    viewer === undefined
      ? ""
      : html`<div class="who">
          <span>${viewer.email} (${viewer.role})</span>
          <form method="post" action="${BASE}/sign-out">${csrfField(viewer)}<button type="submit" class="link">Sign out</button></form>
        </div>`;
  return html`<header class="top"><a class="brand" href="${BASE}">Treasury operator console</a>${who}</header>
    ${viewer === undefined ? "" : nav(viewer, section)}`;
}

export function page(o: PageOptions): string {
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>${o.title} · Treasury console</title>
        <link rel="stylesheet" href="${BASE}/assets/console.css" />
        <script src="${BASE}/assets/console.js" defer></script>
      </head>
      <body>
        <a class="skip" href="#main">Skip to content</a>
        ${header(o.viewer, o.section)}
        <main id="main">
          <h1>${o.title}</h1>
          ${o.body}
        </main>
      </body>
    </html>`.value;
}

/** A message box: what went wrong, in words an operator can act on. */
export function notice(kind: "error" | "ok", text: string): Html {
  return html`<p class="notice ${kind}" role="${kind === "error" ? "alert" : "status"}">${text}</p>`;
}
