/**
 * The hosted payout statement page (alt listener, authorised by the unguessable payout id in the path, never an
 * API key): the statement as one table a screen reader can walk (a caption, column headers, the opening balance,
 * one row per movement, the closing balance), amounts formatted from integer cents.
 */
import type { PageRequest, RpcReply } from "@treasury/contracts";
import type { Statement } from "../domain/statement.ts";
import type { PayoutsDeps } from "../usecases/deps.ts";
import { statementOf, statementPayout } from "../usecases/statement.ts";
import { esc, page, usd } from "./html.ts";

const TYPE_LABELS: Record<string, string> = {
  sale: "Sale",
  refund: "Refund",
  dispute: "Dispute",
  fee: "Fee",
  reserve: "Reserve",
  reserve_release: "Reserve released",
  transfer: "Transfer",
  adjustment: "Adjustment",
  payout: "Payout",
};

const day = (iso: string) => `${iso.replace("T", " ").slice(0, 16)} UTC`;
const num = (cents: number) => `<td class="num">${esc(usd(cents))}</td>`;

function table(s: Statement): string {
  const rows = s.lines.map(
    (l) =>
      `<tr><td>${esc(day(l.occurred_at))}</td><td>${esc(TYPE_LABELS[l.type] ?? l.type)}</td><td><code>${esc(l.reference)}</code></td>` +
      `<td><code>${esc(l.transaction_id)}</code></td>${num(l.amount_cents)}</tr>`,
  );
  return (
    `<table id="statement"><caption>Movements from ${esc(day(s.period_start))} to ${esc(day(s.period_end))}</caption>` +
    `<thead><tr><th scope="col">Date</th><th scope="col">Type</th><th scope="col">Reference</th><th scope="col">Transaction</th>` +
    `<th scope="col" class="num">Amount</th></tr></thead>` +
    `<tbody><tr id="opening"><th scope="row" colspan="4">Opening balance</th>${num(s.opening_balance_cents)}</tr>${rows.join("")}</tbody>` +
    `<tfoot><tr id="closing"><th scope="row" colspan="4">Closing balance</th>${num(s.closing_balance_cents)}</tr></tfoot></table>`
  );
}

export async function statementPage(deps: Pick<PayoutsDeps, "payouts" | "ledger">, req: PageRequest): Promise<RpcReply> {
  const row = await statementPayout(deps, undefined, req.params["payout_id"] ?? "");
  const statement = await statementOf(deps, row);
  const sandbox = row.livemode ? "" : `<p class="sandbox" id="sandbox-note">Sandbox payout: no real money moved.</p>`;
  const body =
    `<h1>Payout statement</h1><p class="muted">Payout <code id="payout-id">${esc(row.id)}</code> to <span id="participant">${esc(row.participant_id)}</span>` +
    ` of <strong id="amount">${esc(usd(row.amount))}</strong></p>${sandbox}${table(statement)}`;
  return page(200, `Payout statement · ${row.id}`, body);
}
