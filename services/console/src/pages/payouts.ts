/**
 * The bank rail's operations (`payouts cut-file|settle|run-schedules`): each runs in the payouts service, which
 * holds the rail's configuration, and is recorded there with the operator and the reason.
 */
import { html } from "../domain/html.ts";
import { actionForm } from "./forms.ts";
import { BASE, notice, page, type Viewer } from "./layout.ts";
import { fields } from "./render.ts";

export function payoutsPage(viewer: Viewer, result?: { title: string; body: Record<string, unknown> }): string {
  const settleDate = html`<label for="settle-date">Settlement date</label><input id="settle-date" name="date" type="date" required />`;
  const body = html`<p>
      Waiting live payouts go into one NACHA file; processing payouts filed a settlement window before a date are paid; due payout schedules pay once per
      period.
    </p>
    <div class="actions">
      ${actionForm(viewer, { action: `${BASE}/payouts/cut-file`, label: "Cut a file", reason: "required" })}
      ${actionForm(viewer, { action: `${BASE}/payouts/settle`, label: "Settle", reason: "required", extra: settleDate })}
      ${actionForm(viewer, { action: `${BASE}/payouts/run-schedules`, label: "Run due schedules", reason: "required" })}
    </div>
    ${result === undefined
      ? ""
      : html`<h2>${result.title}</h2>
          ${notice("ok", "Done; recorded in the payouts service's audit log.")}${fields(result.body)}`}`;
  return page({ title: "Payouts", viewer, section: "payouts", body });
}
