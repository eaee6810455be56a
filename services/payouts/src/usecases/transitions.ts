/**
 * The money-moving transitions of a live payout, each the same three steps as a request: the intent (`action`
 * set on the row, with what the ledger request needs), one svc.ledger.post with a deterministic reference, then
 * one statement that ends the action with the new state and its event.
 *   settle: the bank paid it. Payouts in transit → platform cash (`payout:<id>:settle`); processing → paid,
 *     `payout.executed`.
 *   return: the bank sent it back (an R code). The creator's wallet gets `amount` back, less the org's return
 *     fee if it charges one (`payout:<id>:return`); processing|paid → failed with the code's reason, `payout.failed`.
 *   cancel: an unfiled payout whose bank account was disabled. The wallet gets `amount` back from the in-transit
 *     account (`payout:<id>:cancel`); pending → failed with the reason it was marked with, `payout.failed`.
 * The reconciler drives actions a crash or a ledger timeout left in flight.
 */
import type { PostRequestInput } from "@treasury/contracts";
import { outboxRowValues, postAndSettle, wakeOutboxRelay, type LedgerPosted } from "@treasury/service-kit";
import { returnPostings, settlementPostings } from "../domain/money.ts";
import { returnReason, unusableAccountReason } from "../domain/nacha-returns.ts";
import type { PayoutAction, PayoutRow } from "../domain/records.ts";
import { disabledAccountEvent } from "./bank-account.ts";
import type { PayoutsDeps } from "./deps.ts";
import type { ActionOutcome } from "./ports.ts";
import { presentPayout } from "./present.ts";
import { amountsOf } from "./request-payout.ts";

/** The ledger transactions of the two transitions: their kinds, and references derived from the request's. */
export const SETTLEMENT_KIND = "payout_settlement";
export const RETURN_KIND = "payout_return";
export const settlementReference = (row: Pick<PayoutRow, "ledger_reference">): string => `${row.ledger_reference}:settle`;
export const returnReference = (row: Pick<PayoutRow, "ledger_reference">): string => `${row.ledger_reference}:return`;
export const CANCEL_KIND = "payout_cancel";
export const cancelReference = (row: Pick<PayoutRow, "ledger_reference">): string => `${row.ledger_reference}:cancel`;

export function actionRequest(row: PayoutRow): PostRequestInput {
  const base = {
    org_id: row.org_id,
    livemode: row.livemode,
    metadata: { payout_id: row.id, participant_id: row.participant_id },
    result_extra: { payout_id: row.id },
  };
  if (row.action === "settle") {
    return {
      ...base,
      kind: SETTLEMENT_KIND,
      reference_id: settlementReference(row),
      description: `Payout ${row.id} settled by the bank`,
      postings: settlementPostings(amountsOf(row)),
    };
  }
  if (row.action === "return" && row.wallet_id !== null && row.return_from !== null && row.return_code !== null) {
    const wallet = { wallet_id: row.wallet_id };
    // The fee comes out of the money this same posting gives back (at most the net amount): never a shortfall.
    const fee = row.return_fee > 0 ? [{ debit: wallet, credit: { system: "platform_revenue" as const }, amount: row.return_fee }] : [];
    return {
      ...base,
      kind: RETURN_KIND,
      reference_id: returnReference(row),
      description: `Payout ${row.id} returned by the bank (${row.return_code})`,
      postings: [...returnPostings(wallet, amountsOf(row), row.return_from), ...fee],
    };
  }
  if (row.action === "cancel" && row.wallet_id !== null) {
    return {
      ...base,
      kind: CANCEL_KIND,
      reference_id: cancelReference(row),
      description: `Payout ${row.id} cancelled before filing: ${row.failure_reason ?? "bank account disabled"}`,
      postings: returnPostings({ wallet_id: row.wallet_id }, amountsOf(row), "payouts_in_transit"),
    };
  }
  throw new Error(`payout ${row.id} has no complete action in flight`);
}

/**
 * Steps 2 and 3 of the action in flight on `row`. Every ledger refusal propagates as it is (the action stays in
 * flight: nothing here is refused for good); no answer is service_timeout and the reconciler finishes it.
 */
export async function driveAction(deps: PayoutsDeps, row: PayoutRow): Promise<PayoutRow> {
  const action = row.action;
  if (action === null) return row;
  return postAndSettle({
    post: () => deps.ledger.post(actionRequest(row)),
    settle: (result) => finish(deps, row, action, result),
    isDefinitive: () => false,
    refused: (e) => Promise.reject(e),
    pendingMessage: `The ledger did not answer in time; payout ${row.id} is finished by the reconciler`,
  });
}

/**
 * A return saying the account cannot take money (UNUSABLE_ACCOUNT_RETURNS) disables the participant's bank account
 * with the payout's failure; the store disables it only if it is still the payout's destination (ports.ts).
 */
async function accountToDisable(deps: PayoutsDeps, row: PayoutRow): Promise<ActionOutcome["disable_bank_account"]> {
  const why = unusableAccountReason(row.return_code ?? "");
  if (why === undefined) return undefined;
  const tenant = { orgId: row.org_id, livemode: row.livemode };
  const account = await deps.bankAccounts.find(tenant, row.participant_id);
  if (account === undefined || account.status !== "active") return undefined;
  const reason = `${row.return_code ?? ""}: ${why}`;
  return { id: account.id, reason, event: disabledAccountEvent(deps, tenant, account, { reason, payoutId: row.id, at: deps.now() }) };
}

async function outcomeOf(deps: PayoutsDeps, row: PayoutRow, action: PayoutAction, transactionId: string): Promise<ActionOutcome & { failure_reason?: string }> {
  if (action === "settle") return { status: "paid", transaction_id: transactionId, bank_transfer_status: "settled" };
  if (action === "cancel") return { status: "failed", transaction_id: transactionId, bank_transfer_status: "cancelled" };
  return {
    status: "failed",
    transaction_id: transactionId,
    bank_transfer_status: "returned",
    failure_reason: returnReason(row.return_code ?? ""),
    disable_bank_account: await accountToDisable(deps, row),
  };
}

/** Step 3: the row leaves its action with the new state and its event, in one statement. */
async function finish(deps: PayoutsDeps, row: PayoutRow, action: PayoutAction, result: LedgerPosted): Promise<PayoutRow> {
  const settle = action === "settle";
  const fields: ActionOutcome & { failure_reason?: string } = await outcomeOf(deps, row, action, result.transaction_id);
  const now = deps.now();
  const { disable_bank_account: _disable, ...shown } = fields;
  const after: PayoutRow = {
    ...row,
    ...shown,
    failure_reason: fields.failure_reason ?? row.failure_reason,
    action: null,
    action_at: null,
    paid_at: settle ? now : row.paid_at,
    failed_at: settle ? row.failed_at : now,
    updated_at: now,
  };
  const event = outboxRowValues({ type: settle ? "payout.executed" : "payout.failed", org_id: row.org_id, livemode: row.livemode, data: presentPayout(after) });
  const done = await deps.payouts.finishAction(row.id, action, fields, event);
  if (done !== undefined) {
    wakeOutboxRelay("payouts");
    return done;
  }
  const current = await deps.payouts.findById(row.id);
  if (current === undefined) throw new Error(`payout ${row.id} vanished`);
  return current;
}
