/**
 * Requesting a payout, per docs/architecture.md, "Money across services":
 *   1. record the intent: a `posting` row with ledger reference `payout:<id>` (live: with the destination sealed),
 *      in one statement with the intents of the requests that arrived in the same event-loop turn (deps.ts);
 *   2. one svc.ledger.post: the creator's wallet gives `amount` (idempotent on the reference; the ledger refuses
 *      it below the available balance under the wallet's row lock, so held funds are never paid out);
 *   3. one statement: sandbox → `paid` with `payout.created` then `payout.executed` (no rail is touched);
 *      live → `pending` with `payout.created`, until a bank file carries it (cut-file.ts).
 * Before step 1 risk evaluates the payout: a denial records nothing; a review records the intent `under_review`
 * (nothing posted) until an operator decides (usecases/risk-review.ts).
 * The reconciler re-drives intents stuck between 1 and 3. A refused intent (insufficient balance…) moved
 * nothing: it is hidden, and the same request may be sent again.
 *
 * Errors: validation_error, fees_exceed_amount, amount_too_large (above an ACH entry's maximum, live),
 * wallet_not_found, wallet_payout_not_supported, participant_wallet_mismatch, participant_not_found,
 * payout_not_eligible (live, with the eligibility), rail_not_enabled (live without a configured rail), risk_denied,
 * risk_unavailable (risk did not answer and the org's payouts fail closed),
 * insufficient_balance, wallet_not_active, duplicate_reference_id (with the existing payout),
 * idempotency_conflict, service_timeout (the ledger did not answer: the payout completes shortly),
 * service_unavailable.
 */
import { cents, DomainError, newId, type PostRequestInput, type schemas, type Tenant, type WalletRef } from "@treasury/contracts";
import { outboxRowValues, postAndSettle, requestHash, wakeOutboxRelay, type LedgerPosted, type OutboxRowValues } from "@treasury/service-kit";
import type { z } from "zod";
import { netAmount, payoutPostings, type PayoutAmounts } from "../domain/money.ts";
import { ENTRY_AMOUNT_MAX_CENTS } from "../domain/nacha.ts";
import type { NewPayout, PayoutRow } from "../domain/records.ts";
import { bankDetailsOf } from "./bank-account.ts";
import { payoutDestinationAad, requireSealer, type PayoutsDeps } from "./deps.ts";
import { checkEligibility } from "./eligibility.ts";
import { payoutFailedEvent, presentPayout } from "./present.ts";

type CreatePayoutBody = z.output<typeof schemas.CreatePayoutBody>;

/** The key a payout is evaluated under by risk: its client's reference, so a retried request is one evaluation. */
export const payoutRiskKey = (referenceId: string): string => `payout:${referenceId}`;

export const PAYOUT_KIND = "payout";

/** Ledger refusals that are final: nothing moved, and the same request cannot succeed until something changes. */
const DEFINITIVE = new Set(["insufficient_balance", "participant_not_found", "wallet_not_found", "wallet_not_active"]);

export function amountsOf(row: Pick<PayoutRow, "amount" | "fees" | "fees_paid_by">): PayoutAmounts {
  return { amount: row.amount, fees: row.fees, feesPaidBy: row.fees_paid_by };
}

export function walletRefOf(row: Pick<PayoutRow, "requested_wallet_id" | "participant_id">): WalletRef {
  return row.requested_wallet_id !== null ? { wallet_id: row.requested_wallet_id } : { participant_id: row.participant_id };
}

/** The ledger request of a payout: built only from the stored row, so every driver sends the same one. */
export function payoutRequest(row: PayoutRow): PostRequestInput {
  const wallet = walletRefOf(row);
  return {
    org_id: row.org_id,
    livemode: row.livemode,
    kind: PAYOUT_KIND,
    reference_id: row.ledger_reference,
    amount: row.amount,
    description: `Payout ${row.id}`,
    metadata: { payout_id: row.id, participant_id: row.participant_id, rail: row.rail },
    postings: payoutPostings(wallet, amountsOf(row), row.rail),
    preconditions: [{ wallet, available_gte: row.amount }],
    result_extra: { payout_id: row.id },
  };
}

/**
 * What risk cannot read itself: when the participant's bank account was set or last changed (new_bank_account),
 * on the tenant's clock (a sandbox's stored times are real time: moved by the org's advance).
 */
async function riskFacts(deps: PayoutsDeps, tenant: Tenant, participantId: string): Promise<{ bank_account_updated_at?: string }> {
  const bank = await deps.bankAccounts.find(tenant, participantId);
  if (bank === undefined) return {};
  const advance = deps.clock.now(tenant).getTime() - deps.now().getTime();
  return { bank_account_updated_at: new Date(bank.updated_at.getTime() + advance).toISOString() };
}

/** Whose wallet pays: the participant named, or the owner of the creator earnings wallet named. */
async function resolveParticipant(deps: PayoutsDeps, tenant: Tenant, body: CreatePayoutBody): Promise<string> {
  if (body.wallet_id === undefined) {
    if (body.participant_id === undefined) throw new DomainError("validation_error", "participant_id or wallet_id is required");
    return body.participant_id;
  }
  const wallet = await deps.ledger.getWallet(tenant, body.wallet_id.toLowerCase());
  if (wallet.wallet_type !== "creator_earnings" || wallet.participant_id === null) {
    throw new DomainError("wallet_payout_not_supported", `Wallet ${wallet.id} is a ${wallet.wallet_type} wallet; only creator earnings pay out`);
  }
  if (body.participant_id !== undefined && body.participant_id !== wallet.participant_id) {
    throw new DomainError("participant_wallet_mismatch", `Wallet ${wallet.id} belongs to another participant`, {
      hint: "Send participant_id or wallet_id alone",
    });
  }
  return wallet.participant_id;
}

/** What a live payout needs beyond the ledger's balance check: a rail, eligibility, and the destination sealed. */
async function liveDestination(
  deps: PayoutsDeps,
  tenant: Tenant,
  participantId: string,
  id: string,
  amounts: PayoutAmounts,
): Promise<Pick<NewPayout, "dest_routing_number" | "dest_account_type" | "dest_last4" | "dest_sealed">> {
  if (deps.rail === undefined) throw new DomainError("rail_not_enabled", "The bank payout rail is not configured for live payouts");
  const sealer = requireSealer(deps);
  if (netAmount(amounts) > ENTRY_AMOUNT_MAX_CENTS) {
    throw new DomainError("amount_too_large", `A bank transfer carries at most ${ENTRY_AMOUNT_MAX_CENTS} cents`, { hint: "Split the payout into several" });
  }
  const eligibility = await checkEligibility(deps, tenant, participantId, amounts.amount);
  // The balance is the ledger's to judge, exactly and under its lock; every other blocker stops here.
  const blockers = eligibility.issues.filter((i) => i !== "insufficient_balance");
  if (blockers.length > 0) {
    const { wallet_id: _w, ...shown } = eligibility;
    throw new DomainError("payout_not_eligible", `Participant ${participantId} is not eligible for live payouts: ${blockers.join(", ")}`, {
      hint: `GET /v1/participants/${participantId}/payout-eligibility lists what is missing`,
      extra: { eligibility: shown },
    });
  }
  const bank = await bankDetailsOf(deps, tenant, participantId);
  if (bank === undefined) throw new Error(`eligible participant ${participantId} has no bank account`);
  return {
    dest_routing_number: bank.row.routing_number,
    dest_account_type: bank.row.account_type,
    dest_last4: bank.row.last4,
    dest_sealed: sealer.sealJson(bank.details, payoutDestinationAad(id)),
  };
}

/**
 * An earlier request with the same reference_id: its payout (duplicate_reference_id), a conflict, or a refused
 * intent driven again. A refused intent of a different request moved nothing and is discarded (undefined: create anew).
 */
async function replay(deps: PayoutsDeps, existing: PayoutRow, hash: string): Promise<PayoutRow | undefined> {
  if (existing.status === "refused" && existing.request_hash !== hash) {
    await deps.payouts.discardRefused(existing.id);
    return undefined;
  }
  if (existing.request_hash !== hash) {
    throw new DomainError("idempotency_conflict", `reference_id ${existing.reference_id} was used for a different payout request`, {
      hint: "Use a new reference_id for a different payout; repeat the same body to read the first one",
    });
  }
  if (existing.status === "refused") {
    const again = await deps.payouts.retryRefused(existing.id);
    if (again !== undefined) return drivePayout(deps, again);
    const now = await deps.payouts.findById(existing.id);
    return now === undefined ? undefined : replay(deps, now, hash);
  }
  throw new DomainError("duplicate_reference_id", `A payout with reference_id ${existing.reference_id} exists`, {
    hint: `GET /v1/payouts/${existing.id} reads it`,
    extra: { payout: presentPayout(existing), existing_transaction_id: existing.transaction_id },
  });
}

/** Attempts at claiming a reference_id whose refused intents keep being replaced by concurrent requests. */
const CLAIM_ATTEMPTS_MAX = 3;

/** The payout as it stands after this request drove it: a new one, or the refused intent of the same request driven again. */
export async function requestPayout(deps: PayoutsDeps, tenant: Tenant, body: CreatePayoutBody): Promise<PayoutRow> {
  const hash = requestHash(body);
  for (let attempt = 1; ; attempt++) {
    const payout = await attemptPayout(deps, tenant, body, hash);
    if (payout !== undefined) return payout;
    if (attempt >= CLAIM_ATTEMPTS_MAX) throw new DomainError("service_unavailable", "The reference_id is being claimed by concurrent requests; retry");
  }
}

async function attemptPayout(deps: PayoutsDeps, tenant: Tenant, body: CreatePayoutBody, hash: string): Promise<PayoutRow | undefined> {
  // A live replay must answer with its payout even if the creator is no longer eligible, so it is looked up
  // before the eligibility checks; a sandbox request goes straight to the insert, whose conflict finds a replay.
  if (tenant.livemode) {
    const existing = await deps.payouts.findByReference(tenant, body.reference_id);
    if (existing !== undefined) return replay(deps, existing, hash);
  }
  const participantId = await resolveParticipant(deps, tenant, body);
  const amounts: PayoutAmounts = { amount: cents(body.amount), fees: cents(body.fees ?? 0), feesPaidBy: body.fees_paid_by ?? "platform" };
  const id = newId("po");
  const destination = tenant.livemode
    ? await liveDestination(deps, tenant, participantId, id, amounts)
    : { dest_routing_number: null, dest_account_type: null, dest_last4: null, dest_sealed: null };
  const verdict = await deps.risk.check(tenant, {
    operation: "payout",
    key: payoutRiskKey(body.reference_id),
    amount: amounts.amount,
    participant_id: participantId,
    facts: await riskFacts(deps, tenant, participantId),
  });
  const underReview = verdict.decision === "review";
  const row = await deps.payouts.insertIntent({
    ...(underReview ? { status: "under_review" as const, risk_evaluation_id: verdict.evaluationId } : {}),
    id,
    org_id: tenant.orgId,
    livemode: tenant.livemode,
    participant_id: participantId,
    requested_wallet_id: body.wallet_id?.toLowerCase() ?? null,
    reference_id: body.reference_id,
    request_hash: hash,
    reference_type: body.reference_type ?? null,
    description: body.description ?? null,
    payout_method: body.payout_method ?? null,
    metadata: body.metadata ?? {},
    amount: amounts.amount,
    fees: amounts.fees,
    fees_paid_by: amounts.feesPaidBy,
    net_amount: netAmount(amounts),
    rail: tenant.livemode ? "bank_ach" : "sandbox",
    ledger_reference: `payout:${id}`,
    ...destination,
  });
  if (row === undefined) {
    const raced = await deps.payouts.findByReference(tenant, body.reference_id);
    return raced === undefined ? undefined : replay(deps, raced, hash);
  }
  // Held for an operator: the money stays in the wallet until risk.decided (usecases/risk-review.ts).
  if (underReview) return row;
  await deps.afterIntent();
  return drivePayout(deps, row);
}

function event(type: "payout.created" | "payout.executed", row: PayoutRow, override: { status?: "pending" } = {}): OutboxRowValues {
  return outboxRowValues({ type, org_id: row.org_id, livemode: row.livemode, data: presentPayout(row, override) });
}

/**
 * Steps 2 and 3 for a payout in `posting`. Used by the request, a retried refusal, and the reconciler. A
 * definitive refusal marks the intent refused (it moved nothing) and answers the ledger's error.
 */
export async function drivePayout(deps: PayoutsDeps, row: PayoutRow): Promise<PayoutRow> {
  return postAndSettle({
    post: () => deps.ledger.post(payoutRequest(row)),
    afterPost: deps.afterLedgerPost,
    settle: (result) => settlePayout(deps, row, result),
    isDefinitive: (e) => DEFINITIVE.has(e.code),
    refused: async (e) => {
      // A payout that waited for review was shown to the client: it fails visibly. Any other refused intent moved
      // nothing and stays hidden, so the same request may be sent again.
      if (row.risk_evaluation_id !== null) {
        const failed = await deps.payouts.failUnposted(row.id, "posting", e.code, payoutFailedEvent);
        if (failed !== undefined) wakeOutboxRelay("payouts");
      } else {
        await deps.payouts.refuse(row.id, e.code);
      }
      throw e;
    },
    pendingMessage: "The ledger did not answer in time; the payout completes shortly, retry with the same reference_id to read it",
  });
}

/** Step 3: posting → paid (sandbox) or pending (live) with what the ledger answered, and the events. */
async function settlePayout(deps: PayoutsDeps, row: PayoutRow, result: LedgerPosted): Promise<PayoutRow> {
  const walletId = Object.keys(result.wallets)[0] ?? null;
  const after = walletId === null ? undefined : result.wallets[walletId];
  const now = deps.now();
  const fields = {
    status: row.rail === "sandbox" ? ("paid" as const) : ("pending" as const),
    transaction_id: result.transaction_id,
    wallet_id: walletId,
    previous_balance: after === undefined ? null : after.balance + row.amount,
    new_balance: after?.balance ?? null,
  };
  const settled: PayoutRow = {
    ...row,
    ...fields,
    previous_balance: fields.previous_balance === null ? null : cents(fields.previous_balance),
    new_balance: fields.new_balance === null ? null : cents(fields.new_balance),
    bank_transfer_status: row.rail === "bank_ach" ? "awaiting_file" : null,
    paid_at: fields.status === "paid" ? now : null,
    updated_at: now,
  };
  const events =
    row.rail === "sandbox" ? [event("payout.created", settled, { status: "pending" }), event("payout.executed", settled)] : [event("payout.created", settled)];
  const done = await deps.payouts.settleIntent({ id: row.id, ...fields, at: now, events });
  if (done !== undefined) {
    wakeOutboxRelay("payouts");
    return done;
  }
  const current = await deps.payouts.findById(row.id);
  if (current === undefined) throw new Error(`payout ${row.id} vanished`);
  return current;
}
