/**
 * What an evaluation must read before the rules run: the counters of its velocity and budget policies (each with
 * the start of its window) and the ledger's sales figures for payout_ratio and refund_rate. Pure.
 *
 * A counter is `<policy id>:<subject>`: each policy counts the movements it applies to, for each buyer,
 * participant, IP or category, so a new policy starts from zero and a deleted one stops counting.
 */
import type { Tenant } from "@treasury/contracts";
import type { Policy } from "./policies.ts";
import type { Proposal } from "./rules.ts";

export interface CounterNeed {
  policyId: string;
  counter: string;
  /** The window's start: rows at or before it are not counted. */
  since: Date;
}

export interface ActivityNeed {
  policyId: string;
  key: string;
  participantId: string | undefined;
  /** The ledger counts the days back from midnight UTC of its own day. */
  windowDays: number;
}

/** payout_ratio reads the sales of this many days. */
export const PAYOUT_RATIO_DAYS = 30;

function velocitySubject(p: Policy & { policyType: "velocity" }, proposal: Proposal, tenant: Tenant): string | undefined {
  switch (p.config.subject) {
    case "buyer":
      return proposal.buyerId;
    case "participant":
      return proposal.participantId;
    case "ip":
      return proposal.ip;
    case "org":
      return tenant.orgId;
  }
}

/** The first instant of the calendar month, quarter or year (UTC) that `now` falls in. */
export function periodStart(period: "month" | "quarter" | "year", now: Date): Date {
  const y = now.getUTCFullYear();
  const m = now.getUTCMonth();
  if (period === "year") return new Date(Date.UTC(y, 0, 1));
  if (period === "quarter") return new Date(Date.UTC(y, m - (m % 3), 1));
  return new Date(Date.UTC(y, m, 1));
}

export function counterNeeds(policies: readonly Policy[], proposal: Proposal, tenant: Tenant, now: Date): CounterNeed[] {
  const needs: CounterNeed[] = [];
  for (const p of policies) {
    if (p.policyType === "velocity") {
      const subject = velocitySubject(p, proposal, tenant);
      if (subject !== undefined) needs.push({ policyId: p.id, counter: `${p.id}:${subject}`, since: new Date(now.getTime() - p.config.window_seconds * 1000) });
    } else if (p.policyType === "budget_cap" && proposal.category === p.config.category) {
      needs.push({ policyId: p.id, counter: `${p.id}:${p.config.category}`, since: periodStart(p.config.period, now) });
    }
  }
  return needs;
}

/** Ledger reads of the same participant and window are made once. */
export function activityKey(participantId: string | undefined, windowDays: number): string {
  return `${participantId ?? ""}@${windowDays}`;
}

/** payout_ratio reads the participant's sales (none without a participant); refund_rate the participant's, or the org's. */
export function activityNeeds(policies: readonly Policy[], proposal: Proposal): ActivityNeed[] {
  const needs: ActivityNeed[] = [];
  for (const p of policies) {
    let windowDays: number | undefined;
    if (p.policyType === "payout_ratio" && proposal.participantId !== undefined) windowDays = PAYOUT_RATIO_DAYS;
    if (p.policyType === "refund_rate") windowDays = p.config.window_days;
    if (windowDays !== undefined)
      needs.push({ policyId: p.id, key: activityKey(proposal.participantId, windowDays), participantId: proposal.participantId, windowDays });
  }
  return needs;
}
