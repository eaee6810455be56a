/** Forms that change something: each carries the session's CSRF token and, where the owner records one, a reason. */
import { html, type Html } from "../domain/html.ts";
import { csrfField, type Viewer } from "./layout.ts";

let formSeq = 0;

export interface ActionForm {
  action: string;
  label: string;
  /** The reason field: required, optional, or none. */
  reason: "required" | "optional" | "none";
  hidden?: Record<string, string>;
  extra?: Html;
  danger?: boolean;
}

export function actionForm(viewer: Viewer, f: ActionForm): Html {
  formSeq = (formSeq + 1) % 1_000_000;
  const id = `f${formSeq}`;
  const hidden = Object.entries(f.hidden ?? {}).map(([k, v]) => html`<input type="hidden" name="${k}" value="${v}" />`);
  const reason =
    f.reason === "none"
      ? ""
      : html`<label for="${id}-reason">Reason${f.reason === "required" ? "" : " (optional)"}</label>
          <input id="${id}-reason" name="reason" maxlength="1000" ${f.reason === "required" ? html` required` : ""} />`;
  return html`<form method="post" action="${f.action}" class="stack action">
    ${csrfField(viewer)}${hidden}${f.extra ?? ""}${reason} <button type="submit" ${f.danger === true ? html` class="danger"` : ""}>${f.label}</button>
  </form>`;
}
