/**
 * The rules: what each policy type says about a proposed movement. Pure: the time, the counters' state and the
 * ledger's figures are passed in, so each rule is tested alone (rules.test.ts). A hard hit denies; a soft hit
 * without a hard one puts the movement under review; no hit allows.
 */
import { percentToBps, type schemas } from "@treasury/contracts";
import type { Policy, RiskOperation, Severity } from "./policies.ts";
import type { PolicyType } from "./policies.ts";

export interface Proposal {
  operation: RiskOperation;
  amount: number;
  currency: string;
  participantId: string | undefined;
  buyerId: string | undefined;
  ip: string | undefined;
  category: string | undefined;
  authorizingInstrumentId: string | undefined;
  expectedDate: string | undefined;
  counterpartyName: string | undefined;
  /** When the bank account the money goes to last changed (the caller knows; on-demand evaluations do not). */
  bankAccountUpdatedAt: Date | undefined;
}

export interface Hit {
  policyId: string;
  policyType: PolicyType;
  severity: Severity;
  reason: string;
}

/** What a counter has taken in since its window started. */
export interface CounterState {
  count: number;
  amount: number;
}

/** A participant's (or the org's) sales since a time, and what was refunded of them (the ledger's figures). */
export type SalesActivity = schemas.SalesActivity;

export interface RuleInputs {
  now: Date;
  /** By counter (counters.ts): what it holds in the policy's window. */
  counters: ReadonlyMap<string, CounterState>;
  /** By activity key (counters.ts activityKey): the ledger's figures for payout_ratio and refund_rate. */
  activity: ReadonlyMap<string, SalesActivity>;
  /** The counter of each counting policy that applies (counters.ts counterOf), by policy id. */
  counterOf: ReadonlyMap<string, string>;
  /** The activity key of each ledger-reading policy that applies, by policy id. */
  activityOf: ReadonlyMap<string, string>;
}

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;

/** amount / base > bps / 10000, in exact integer arithmetic. */
function overShare(amount: number, base: number, bps: number): boolean {
  return BigInt(amount) * 10_000n > BigInt(base) * BigInt(bps);
}

type Rule = (p: Policy, proposal: Proposal, inputs: RuleInputs) => string | undefined;

function velocity(p: Policy, proposal: Proposal, inputs: RuleInputs): string | undefined {
  if (p.policyType !== "velocity") return undefined;
  const counter = inputs.counterOf.get(p.id);
  if (counter === undefined) return undefined; // no subject to count (no buyer named, say)
  const state = inputs.counters.get(counter) ?? { count: 0, amount: 0 };
  const c = p.config;
  const window = `${c.window_seconds} s`;
  if (c.max_count !== undefined && state.count + 1 > c.max_count) return `${c.subject} made ${state.count} movements in ${window}; at most ${c.max_count}`;
  if (c.max_amount_cents !== undefined && state.amount + proposal.amount > c.max_amount_cents) {
    return `${c.subject} moved ${state.amount} cents in ${window}; with ${proposal.amount} more it passes ${c.max_amount_cents}`;
  }
  return undefined;
}

function budgetCap(p: Policy, proposal: Proposal, inputs: RuleInputs): string | undefined {
  if (p.policyType !== "budget_cap") return undefined;
  const counter = inputs.counterOf.get(p.id);
  if (counter === undefined) return undefined; // another category
  const spent = inputs.counters.get(counter)?.amount ?? 0;
  const c = p.config;
  if (spent + proposal.amount <= c.max_amount_cents) return undefined;
  return `category ${c.category} has spent ${spent} cents this ${c.period}; with ${proposal.amount} more it passes ${c.max_amount_cents}`;
}

function payoutRatio(p: Policy, proposal: Proposal, inputs: RuleInputs): string | undefined {
  if (p.policyType !== "payout_ratio") return undefined;
  const key = inputs.activityOf.get(p.id);
  const sales = key === undefined ? undefined : inputs.activity.get(key);
  if (sales === undefined) return undefined; // no participant named
  const bps = percentToBps(p.config.max_percent_of_30d_sales);
  if (!overShare(proposal.amount, sales.gross_cents, bps)) return undefined;
  return `${proposal.amount} cents is more than ${p.config.max_percent_of_30d_sales}% of the participant's sales of the last 30 days (${sales.gross_cents} cents)`;
}

function refundRate(p: Policy, proposal: Proposal, inputs: RuleInputs): string | undefined {
  if (p.policyType !== "refund_rate") return undefined;
  const key = inputs.activityOf.get(p.id);
  const sales = key === undefined ? undefined : inputs.activity.get(key);
  if (sales === undefined) return undefined;
  const refunded = sales.refunded_cents + (proposal.operation === "refund" ? proposal.amount : 0);
  if (refunded === 0) return undefined;
  const bps = percentToBps(p.config.max_percent);
  if (sales.gross_cents > 0 && !overShare(refunded, sales.gross_cents, bps)) return undefined;
  return `refunds of ${refunded} cents on sales of ${sales.gross_cents} cents in the last ${p.config.window_days} days pass ${p.config.max_percent}%`;
}

function newBankAccount(p: Policy, proposal: Proposal, inputs: RuleInputs): string | undefined {
  if (p.policyType !== "new_bank_account" || proposal.bankAccountUpdatedAt === undefined) return undefined;
  const ageMs = inputs.now.getTime() - proposal.bankAccountUpdatedAt.getTime();
  if (ageMs >= p.config.cooldown_hours * HOUR_MS) return undefined;
  return `the bank account changed ${Math.max(0, Math.floor(ageMs / HOUR_MS))} h ago; payouts wait ${p.config.cooldown_hours} h`;
}

function projectionGuard(p: Policy, proposal: Proposal, inputs: RuleInputs): string | undefined {
  if (p.policyType !== "projection_guard") return undefined;
  if (proposal.expectedDate === undefined) return "no expected_date to check against the projection horizon";
  const expected = Date.parse(proposal.expectedDate);
  const today = Date.UTC(inputs.now.getUTCFullYear(), inputs.now.getUTCMonth(), inputs.now.getUTCDate());
  if (expected < today) return `expected_date ${proposal.expectedDate} is in the past`;
  if (expected > today + p.config.horizon_days * DAY_MS) return `expected_date ${proposal.expectedDate} is beyond the ${p.config.horizon_days}-day horizon`;
  return undefined;
}

const RULES: Record<PolicyType, Rule> = {
  amount_limit: (p, proposal) =>
    p.policyType === "amount_limit" && proposal.amount > p.config.max_amount_cents
      ? `${proposal.amount} cents is over the limit of ${p.config.max_amount_cents}`
      : undefined,
  velocity,
  new_bank_account: newBankAccount,
  payout_ratio: payoutRatio,
  refund_rate: refundRate,
  require_instrument: (p, proposal) => (proposal.authorizingInstrumentId === undefined ? "no authorizing instrument" : undefined),
  budget_cap: budgetCap,
  projection_guard: projectionGuard,
};

export interface Outcome {
  decision: schemas.RiskDecision;
  hits: Hit[];
}

/** Applies each policy (already filtered and ordered: policies.ts applicable) to the proposal. */
export function evaluate(policies: readonly Policy[], proposal: Proposal, inputs: RuleInputs): Outcome {
  const hits: Hit[] = [];
  for (const p of policies) {
    const reason = RULES[p.policyType](p, proposal, inputs);
    if (reason !== undefined) hits.push({ policyId: p.id, policyType: p.policyType, severity: p.severity, reason });
  }
  const decision = hits.some((h) => h.severity === "hard") ? "deny" : hits.length > 0 ? "review" : "allow";
  return { decision, hits };
}
