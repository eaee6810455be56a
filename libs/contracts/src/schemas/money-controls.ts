/**
 * Money controls (docs/api.md, Money controls): the sandbox test clock, reserves and payout schedules, and the
 * payout statement's query.
 */
import { z } from "zod";
import { NonNegativeCents, Percent } from "../money.ts";
import { isoDate } from "./common.ts";

/** How far one advance may move a sandbox clock: ten years. */
export const CLOCK_ADVANCE_MAX_SECONDS = 10 * 366 * 86_400;

/** `{to}` (an ISO time, not before the clock's now) or `{by_seconds}`, not both. */
export const SandboxClockAdvanceBody = z
  .object({
    to: isoDate.optional(),
    by_seconds: z
      .number({ error: "must be a number" })
      .int({ message: "must be an integer" })
      .min(1, { message: "must be at least 1" })
      .max(CLOCK_ADVANCE_MAX_SECONDS, { message: `must be at most ${CLOCK_ADVANCE_MAX_SECONDS}` })
      .optional(),
  })
  .refine((b) => (b.to === undefined) !== (b.by_seconds === undefined), { message: "give either to or by_seconds", path: ["to"] });

export const RESERVE_TYPES = ["rolling", "fixed", "none"] as const;

/** A rolling reserve takes percent and days; a fixed one amount_cents; none clears it. */
export const ReserveBody = z
  .object({
    type: z.enum(RESERVE_TYPES, { error: `type must be one of ${RESERVE_TYPES.join(", ")}` }),
    percent: Percent.optional(),
    days: z.number({ error: "must be a number" }).int({ message: "must be an integer" }).min(1).max(365).optional(),
    amount_cents: NonNegativeCents.optional(),
  })
  .superRefine((b, ctx) => {
    const need = (field: "percent" | "days" | "amount_cents") => {
      if (b[field] === undefined) ctx.addIssue({ code: "custom", path: [field], message: `is required for a ${b.type} reserve` });
    };
    const refuse = (field: "percent" | "days" | "amount_cents") => {
      if (b[field] !== undefined) ctx.addIssue({ code: "custom", path: [field], message: `does not apply to a ${b.type} reserve` });
    };
    if (b.type === "rolling") {
      need("percent");
      need("days");
      refuse("amount_cents");
    } else if (b.type === "fixed") {
      need("amount_cents");
      refuse("percent");
      refuse("days");
    } else for (const f of ["percent", "days", "amount_cents"] as const) refuse(f);
  });

export const PAYOUT_INTERVALS = ["manual", "daily", "weekly", "monthly"] as const;
export const WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"] as const;

/** weekly needs weekly_anchor, monthly needs monthly_anchor (the last day in shorter months). */
export const PayoutScheduleBody = z
  .object({
    interval: z.enum(PAYOUT_INTERVALS, { error: `interval must be one of ${PAYOUT_INTERVALS.join(", ")}` }),
    weekly_anchor: z.enum(WEEKDAYS, { error: `weekly_anchor must be one of ${WEEKDAYS.join(", ")}` }).optional(),
    monthly_anchor: z.number({ error: "must be a number" }).int({ message: "must be an integer" }).min(1).max(31).optional(),
    delay_days: z.number({ error: "must be a number" }).int({ message: "must be an integer" }).min(0).max(30).optional(),
    minimum_amount_cents: NonNegativeCents.optional(),
  })
  .superRefine((b, ctx) => {
    if (b.interval === "weekly" && b.weekly_anchor === undefined) ctx.addIssue({ code: "custom", path: ["weekly_anchor"], message: "is required for weekly" });
    if (b.interval !== "weekly" && b.weekly_anchor !== undefined) ctx.addIssue({ code: "custom", path: ["weekly_anchor"], message: "applies to weekly only" });
    if (b.interval === "monthly" && b.monthly_anchor === undefined)
      ctx.addIssue({ code: "custom", path: ["monthly_anchor"], message: "is required for monthly" });
    if (b.interval !== "monthly" && b.monthly_anchor !== undefined)
      ctx.addIssue({ code: "custom", path: ["monthly_anchor"], message: "applies to monthly only" });
  });

export const STATEMENT_FORMATS = ["json", "csv"] as const;
export const PayoutStatementQuery = z.object({
  format: z.enum(STATEMENT_FORMATS, { error: `format must be one of ${STATEMENT_FORMATS.join(", ")}` }).optional(),
});

/** What a statement line is (wire-decisions §8). */
export const STATEMENT_LINE_TYPES = ["sale", "refund", "dispute", "fee", "reserve", "reserve_release", "transfer", "adjustment", "payout"] as const;
