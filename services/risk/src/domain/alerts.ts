/**
 * Alert configuration and which alerts an evaluation fires. Pure.
 *
 * review_required fires when an evaluation goes to review; breach_risk when a hard policy denied a movement;
 * instrument_invalidated when require_instrument was hit. projection_created is accepted for configuration, but
 * nothing fires it yet: the platform makes no cash projections.
 */
import type { schemas, Tenant } from "@treasury/contracts";
import type { Evaluation } from "./evaluations.ts";
import { presentEvaluation } from "./evaluations.ts";

export type AlertType = schemas.AlertType;
export type AlertChannel = (typeof schemas.ALERT_CHANNELS)[number];

export interface AlertConfig {
  id: string;
  tenant: Tenant;
  alertType: AlertType;
  channel: AlertChannel;
  webhookUrl: string | null;
  recipients: string[];
  thresholds: { min_amount_cents?: number | undefined };
  isActive: boolean;
  createdAt: Date;
  updatedAt: Date;
}

/** What an alert says: the same body goes to a webhook and, as text, to email. */
export interface AlertPayload {
  alert_type: AlertType;
  org_id: string;
  livemode: boolean;
  evaluation: schemas.RiskEvaluation | null;
  /** True for the `test` action's alert. */
  test: boolean;
  created_at: string;
}

export function alertTypesFor(e: Evaluation): AlertType[] {
  const types: AlertType[] = [];
  if (e.decision === "review") types.push("review_required");
  if (e.decision === "deny") types.push("breach_risk");
  if (e.hits.some((h) => h.policyType === "require_instrument")) types.push("instrument_invalidated");
  return types;
}

/** The configs an evaluation fires: active, of a type it raises, at or above the config's amount threshold. */
export function alertsFor(e: Evaluation, configs: readonly AlertConfig[]): AlertConfig[] {
  const types = new Set(alertTypesFor(e));
  return configs.filter((c) => c.isActive && types.has(c.alertType) && e.proposal.amount >= (c.thresholds.min_amount_cents ?? 0));
}

export function alertPayload(type: AlertType, e: Evaluation | null, tenant: Tenant, now: Date): AlertPayload {
  return {
    alert_type: type,
    org_id: tenant.orgId,
    livemode: tenant.livemode,
    evaluation: e === null ? null : presentEvaluation(e),
    test: e === null,
    created_at: now.toISOString(),
  };
}

export function presentAlertConfig(c: AlertConfig): Record<string, unknown> {
  return {
    id: c.id,
    alert_type: c.alertType,
    channel: c.channel,
    webhook_url: c.webhookUrl,
    recipients: c.recipients,
    thresholds: c.thresholds,
    is_active: c.isActive,
    livemode: c.tenant.livemode,
    created_at: c.createdAt.toISOString(),
    updated_at: c.updatedAt.toISOString(),
  };
}

/** One line a person reads first: the subject of an alert email. */
export function alertSubject(p: AlertPayload): string {
  const env = p.livemode ? "live" : "sandbox";
  if (p.test) return `[treasury risk] test alert (${p.alert_type}, ${env})`;
  const e = p.evaluation;
  return `[treasury risk] ${p.alert_type}: ${e?.operation ?? "evaluation"} of ${e?.amount ?? 0} cents (${e?.decision ?? "?"}, ${env})`;
}
