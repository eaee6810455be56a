/**
 * `POST /v1/configure-alerts`: the tenant's alert configurations (list, create, update, delete) and `test`, which
 * sends a test alert through the config's channel at once and says whether it arrived. Alerts fired by
 * evaluations are recorded with them and sent by sendDueAlerts (jobs/alerts.ts), retried with backoff.
 *
 * Errors: validation_error (a webhook config without webhook_url, an email one without recipients),
 * alert_config_not_found, alert_delivery_failed (test).
 */
import { DomainError, parseOrThrow, schemas, type Tenant } from "@treasury/contracts";
import { alertUrlProblem } from "../domain/alert-url.ts";
import { alertPayload, presentAlertConfig, type AlertConfig } from "../domain/alerts.ts";
import type { RiskDeps } from "./ports.ts";

/** Configurations per tenant: each evaluation that fires reads them all. */
export const ALERT_CONFIGS_PER_TENANT_MAX = 50;

type Body = schemas.ConfigureAlertsBody;
type Deps = Pick<RiskDeps, "alertConfigs" | "alertSender" | "newId" | "now" | "allowPrivateAlertUrls">;

function invalid(path: string, message: string): DomainError {
  return new DomainError("validation_error", `Invalid body: ${path}: ${message}`, { details: [{ path, message }] });
}

/** A config's channel has the target it needs, and only that one. */
function checkTarget(c: AlertConfig, allowPrivate: boolean): void {
  if (c.channel === "webhook" && c.webhookUrl === null) throw invalid("webhook_url", "is required for the webhook channel");
  const problem = c.webhookUrl === null ? undefined : alertUrlProblem(c.webhookUrl, allowPrivate);
  if (problem !== undefined) throw invalid("webhook_url", problem);
  if (c.channel === "email" && c.recipients.length === 0) throw invalid("recipients", "is required for the email channel");
}

function withChannel(c: AlertConfig): AlertConfig {
  return c.channel === "webhook" ? { ...c, recipients: [] } : { ...c, webhookUrl: null };
}

async function mustGet(deps: Deps, tenant: Tenant, id: string): Promise<AlertConfig> {
  const found = await deps.alertConfigs.get(tenant, id);
  if (found === undefined)
    throw new DomainError("alert_config_not_found", `Alert configuration ${id} not found`, { hint: "POST /v1/configure-alerts {action: 'list'}" });
  return found;
}

async function create(deps: Deps, tenant: Tenant, b: Extract<Body, { action: "create" }>): Promise<AlertConfig> {
  if ((await deps.alertConfigs.list(tenant)).length >= ALERT_CONFIGS_PER_TENANT_MAX) {
    throw invalid("action", `an org may hold at most ${ALERT_CONFIGS_PER_TENANT_MAX} alert configurations per environment`);
  }
  const now = deps.now(tenant);
  const config = withChannel({
    id: deps.newId("alertConfig"),
    tenant,
    alertType: b.alert_type,
    channel: b.channel,
    webhookUrl: b.webhook_url ?? null,
    recipients: b.recipients ?? [],
    thresholds: b.thresholds ?? {},
    isActive: b.is_active ?? true,
    createdAt: now,
    updatedAt: now,
  });
  checkTarget(config, deps.allowPrivateAlertUrls);
  await deps.alertConfigs.insert(config);
  return config;
}

async function update(deps: Deps, tenant: Tenant, b: Extract<Body, { action: "update" }>): Promise<AlertConfig> {
  const c = await mustGet(deps, tenant, b.config_id);
  const next = withChannel({
    ...c,
    alertType: b.alert_type ?? c.alertType,
    channel: b.channel ?? c.channel,
    webhookUrl: b.webhook_url ?? c.webhookUrl,
    recipients: b.recipients ?? c.recipients,
    thresholds: b.thresholds ?? c.thresholds,
    isActive: b.is_active ?? c.isActive,
    updatedAt: deps.now(tenant),
  });
  checkTarget(next, deps.allowPrivateAlertUrls);
  await deps.alertConfigs.update(next);
  return next;
}

async function test(deps: Deps, tenant: Tenant, id: string): Promise<Record<string, unknown>> {
  const c = await mustGet(deps, tenant, id);
  try {
    await deps.alertSender.send(c, alertPayload(c.alertType, null, tenant, deps.now(tenant)));
  } catch (e) {
    throw new DomainError("alert_delivery_failed", `The test alert was not delivered: ${e instanceof Error ? e.message : String(e)}`);
  }
  return { alert_config: presentAlertConfig(c), delivered: true };
}

export async function configureAlerts(deps: Deps, tenant: Tenant, body: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const b = parseOrThrow(schemas.ConfigureAlertsBody, body);
  switch (b.action) {
    case "list": {
      const configs = await deps.alertConfigs.list(tenant);
      return { status: 200, body: { alert_configs: configs.map(presentAlertConfig), total: configs.length } };
    }
    case "create":
      return { status: 201, body: { alert_config: presentAlertConfig(await create(deps, tenant, b)) } };
    case "update":
      return { status: 200, body: { alert_config: presentAlertConfig(await update(deps, tenant, b)) } };
    case "delete": {
      if (!(await deps.alertConfigs.remove(tenant, b.config_id, deps.now(tenant)))) await mustGet(deps, tenant, b.config_id);
      return { status: 200, body: { deleted: true, config_id: b.config_id } };
    }
    case "test":
      return { status: 200, body: await test(deps, tenant, b.config_id) };
  }
}

/** Attempts per alert before it is marked failed, and the wait before each retry. */
export const ALERT_ATTEMPTS_MAX = 8;
const ALERT_RETRY_BASE_MS = 5_000;
const ALERT_LEASE_MS = 60_000;

/** Sends the alerts that are due; answers how many were sent. */
export async function sendDueAlerts(deps: Pick<RiskDeps, "alertDeliveries" | "alertSender">, batchMax: number): Promise<number> {
  const due = await deps.alertDeliveries.claimDue(batchMax, ALERT_LEASE_MS);
  let sent = 0;
  for (const d of due) {
    try {
      await deps.alertSender.send(d.config, d.payload);
      await deps.alertDeliveries.markSent(d.id);
      sent += 1;
    } catch (e) {
      const attempts = d.attempts + 1;
      const nextAt = attempts >= ALERT_ATTEMPTS_MAX ? undefined : new Date(Date.now() + ALERT_RETRY_BASE_MS * 2 ** (attempts - 1));
      await deps.alertDeliveries.markFailed(d.id, e instanceof Error ? e.message : String(e), nextAt);
    }
  }
  return sent;
}
