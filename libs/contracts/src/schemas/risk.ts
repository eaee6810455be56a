/**
 * Risk (docs/api.md, Risk; scope `risk`): fraud policies, evaluations of a proposed money movement, and the alerts
 * risk sends when an evaluation needs attention. Each policy type has its own config schema, so a bad config is a
 * 400 naming the field (`config.max_amount_cents`).
 */
import { z } from "zod";
import { ParticipantId, ReferenceId } from "../ids.ts";
import { PositiveCents, Percent } from "../money.ts";
import { bool, email, isoDate, pagingInt, str, url } from "./common.ts";

/** The money movements a policy may apply to, and `evaluation` (an evaluation asked for on demand). */
export const RISK_OPERATIONS = ["checkout", "payout", "refund", "transfer", "withdrawal", "evaluation"] as const;
export type RiskOperation = (typeof RISK_OPERATIONS)[number];
/** The operations the money path evaluates before money moves (`evaluation` is the on-demand one). */
export const MONEY_RISK_OPERATIONS = ["checkout", "payout", "refund", "transfer", "withdrawal"] as const;
export type MoneyRiskOperation = (typeof MONEY_RISK_OPERATIONS)[number];
/**
 * What a money movement does when risk does not answer within its deadline: `open` lets it go ahead unevaluated,
 * `closed` refuses it (503 risk_unavailable). Set per org, environment and operation (`admin risk set-fail-mode`).
 */
export const RISK_FAIL_MODES = ["open", "closed"] as const;
export type RiskFailMode = (typeof RISK_FAIL_MODES)[number];
/** A buyer waiting at checkout is not turned away for an outage; money leaving the platform waits for a check. */
export const DEFAULT_RISK_FAIL_MODES: Readonly<Record<MoneyRiskOperation, RiskFailMode>> = {
  checkout: "open",
  payout: "closed",
  refund: "open",
  transfer: "closed",
  withdrawal: "closed",
};
export const RiskOperationSchema = z.enum(RISK_OPERATIONS, { error: `must be one of ${RISK_OPERATIONS.join(", ")}` });

export const POLICY_TYPES = [
  "amount_limit",
  "velocity",
  "new_bank_account",
  "payout_ratio",
  "refund_rate",
  "require_instrument",
  "budget_cap",
  "projection_guard",
] as const;
export type PolicyType = (typeof POLICY_TYPES)[number];
export const POLICY_SEVERITIES = ["hard", "soft"] as const;
export const VELOCITY_SUBJECTS = ["buyer", "participant", "ip", "org"] as const;
export const BUDGET_PERIODS = ["month", "quarter", "year"] as const;
export const RISK_DECISIONS = ["allow", "review", "deny"] as const;
export type RiskDecision = (typeof RISK_DECISIONS)[number];

/** A velocity window is at most 31 days: the counters keep that much history and no more. */
export const VELOCITY_WINDOW_SECONDS_MAX = 31 * 86_400;
const int = (min: number, max: number) =>
  z
    .number({ error: "must be a number" })
    .int({ message: "must be an integer" })
    .min(min, { message: `must be at least ${min}` })
    .max(max, { message: `must be at most ${max}` });

export const PolicyConfigs = {
  amount_limit: z.object({ max_amount_cents: PositiveCents }).strict(),
  velocity: z
    .object({
      subject: z.enum(VELOCITY_SUBJECTS, { error: `must be one of ${VELOCITY_SUBJECTS.join(", ")}` }),
      max_count: int(1, 1_000_000).optional(),
      max_amount_cents: PositiveCents.optional(),
      window_seconds: int(1, VELOCITY_WINDOW_SECONDS_MAX),
    })
    .strict()
    .refine((c) => c.max_count !== undefined || c.max_amount_cents !== undefined, {
      message: "give max_count, max_amount_cents or both",
      path: ["max_count"],
    }),
  new_bank_account: z.object({ cooldown_hours: int(1, 8_760) }).strict(),
  payout_ratio: z.object({ max_percent_of_30d_sales: Percent }).strict(),
  refund_rate: z.object({ max_percent: Percent, window_days: int(1, 365) }).strict(),
  require_instrument: z.object({}).strict(),
  budget_cap: z
    .object({
      category: str(100).min(1, { message: "must not be empty" }),
      period: z.enum(BUDGET_PERIODS, { error: `must be one of ${BUDGET_PERIODS.join(", ")}` }),
      max_amount_cents: PositiveCents,
    })
    .strict(),
  projection_guard: z.object({ horizon_days: int(1, 3_660) }).strict(),
} as const satisfies Record<PolicyType, z.ZodType>;
export type PolicyConfig<T extends PolicyType = PolicyType> = z.infer<(typeof PolicyConfigs)[T]>;

const policyCommon = {
  severity: z.enum(POLICY_SEVERITIES, { error: "must be hard or soft" }).optional(),
  priority: int(0, 1_000_000).optional(),
  applies_to: z.array(RiskOperationSchema).min(1, { message: "name at least one operation" }).max(RISK_OPERATIONS.length).optional(),
  enabled: bool.optional(),
  description: str(500).optional(),
};

/** One branch per policy type: the config is checked against its type's schema. */
export const CreatePolicyBody = z.discriminatedUnion(
  "policy_type",
  [
    z.object({ policy_type: z.literal("amount_limit"), config: PolicyConfigs.amount_limit, ...policyCommon }),
    z.object({ policy_type: z.literal("velocity"), config: PolicyConfigs.velocity, ...policyCommon }),
    z.object({ policy_type: z.literal("new_bank_account"), config: PolicyConfigs.new_bank_account, ...policyCommon }),
    z.object({ policy_type: z.literal("payout_ratio"), config: PolicyConfigs.payout_ratio, ...policyCommon }),
    z.object({ policy_type: z.literal("refund_rate"), config: PolicyConfigs.refund_rate, ...policyCommon }),
    z.object({ policy_type: z.literal("require_instrument"), config: PolicyConfigs.require_instrument.default({}), ...policyCommon }),
    z.object({ policy_type: z.literal("budget_cap"), config: PolicyConfigs.budget_cap, ...policyCommon }),
    z.object({ policy_type: z.literal("projection_guard"), config: PolicyConfigs.projection_guard, ...policyCommon }),
  ],
  { error: `policy_type must be one of ${POLICY_TYPES.join(", ")}` },
);
export type CreatePolicyBody = z.infer<typeof CreatePolicyBody>;

export const ListPoliciesQuery = z.object({
  policy_type: z.enum(POLICY_TYPES).optional(),
  limit: pagingInt(1, 100).optional(),
  offset: pagingInt(0, 1_000_000).optional(),
});

/** An evaluation asked for on demand; `operation` defaults to `evaluation`. */
export const CreateEvaluationBody = z.object({
  idempotency_key: ReferenceId,
  amount: PositiveCents,
  currency: str(3).optional(),
  counterparty_name: str(255).optional(),
  authorizing_instrument_id: str(255).optional(),
  expected_date: isoDate.optional(),
  category: str(100).optional(),
  participant_id: ParticipantId.optional(),
  buyer_id: str(255).optional(),
  ip: str(64).optional(),
  operation: RiskOperationSchema.optional(),
});
export type CreateEvaluationBody = z.infer<typeof CreateEvaluationBody>;

export const ALERT_TYPES = ["breach_risk", "projection_created", "instrument_invalidated", "review_required"] as const;
export type AlertType = (typeof ALERT_TYPES)[number];
export const ALERT_CHANNELS = ["webhook", "email"] as const;
/** What an alert's thresholds may say: the smallest amount that fires it. */
export const AlertThresholds = z.object({ min_amount_cents: PositiveCents.optional() }).strict();
const alertFields = {
  alert_type: z.enum(ALERT_TYPES, { error: `must be one of ${ALERT_TYPES.join(", ")}` }),
  channel: z.enum(ALERT_CHANNELS, { error: "must be webhook or email" }),
  webhook_url: url.optional(),
  recipients: z.array(email).min(1).max(20).optional(),
  thresholds: AlertThresholds.optional(),
  is_active: bool.optional(),
};
const configId = str(100).min(1);

export const ConfigureAlertsBody = z.discriminatedUnion(
  "action",
  [
    z.object({ action: z.literal("list") }),
    z.object({ action: z.literal("create"), ...alertFields }),
    z.object({
      action: z.literal("update"),
      config_id: configId,
      ...alertFields,
      alert_type: alertFields.alert_type.optional(),
      channel: alertFields.channel.optional(),
    }),
    z.object({ action: z.literal("delete"), config_id: configId }),
    z.object({ action: z.literal("test"), config_id: configId }),
  ],
  { error: "action must be one of list, create, update, delete, test" },
);
export type ConfigureAlertsBody = z.infer<typeof ConfigureAlertsBody>;
