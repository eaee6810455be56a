/** SQL of alert configurations and the alerts waiting to be sent (risk.alert_configs, risk.alert_deliveries). */
import type { Tenant } from "@treasury/contracts";
import type { Sql, Tx } from "@treasury/service-kit";
import type postgres from "postgres";
import type { AlertConfig, AlertPayload } from "../domain/alerts.ts";
import { sharedPerTurn } from "./turn-reads.ts";
import type { AlertConfigStore, AlertDelivery, AlertDeliveryStore, PendingAlert } from "../usecases/ports.ts";

interface ConfigRow {
  id: string;
  org_id: string;
  livemode: boolean;
  alert_type: AlertConfig["alertType"];
  channel: AlertConfig["channel"];
  webhook_url: string | null;
  recipients: string[];
  thresholds: AlertConfig["thresholds"];
  is_active: boolean;
  created_at: Date;
  updated_at: Date;
}

function configOf(r: ConfigRow): AlertConfig {
  return {
    id: r.id,
    tenant: { orgId: r.org_id, livemode: r.livemode },
    alertType: r.alert_type,
    channel: r.channel,
    webhookUrl: r.webhook_url,
    recipients: r.recipients,
    thresholds: r.thresholds,
    isActive: r.is_active,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

const live = (t: Tenant, sql: Sql) => sql`org_id = ${t.orgId} and livemode = ${t.livemode} and deleted_at is null`;

export function pgAlertConfigStore(sql: Sql): AlertConfigStore {
  return {
    async insert(c) {
      await sql`
        insert into risk.alert_configs (id, org_id, livemode, alert_type, channel, webhook_url, recipients, thresholds, is_active, created_at, updated_at)
        values (${c.id}, ${c.tenant.orgId}, ${c.tenant.livemode}, ${c.alertType}, ${c.channel}, ${c.webhookUrl}, ${c.recipients},
                ${sql.json(c.thresholds as postgres.JSONValue)}, ${c.isActive}, ${c.createdAt}, ${c.updatedAt})`;
    },
    async update(c) {
      await sql`
        update risk.alert_configs set alert_type = ${c.alertType}, channel = ${c.channel}, webhook_url = ${c.webhookUrl}, recipients = ${c.recipients},
          thresholds = ${sql.json(c.thresholds as postgres.JSONValue)}, is_active = ${c.isActive}, updated_at = ${c.updatedAt}
        where id = ${c.id} and ${live(c.tenant, sql)}`;
    },
    async get(t, id) {
      const [row] = await sql<ConfigRow[]>`select * from risk.alert_configs where id = ${id} and ${live(t, sql)}`;
      return row === undefined ? undefined : configOf(row);
    },
    async list(t) {
      return (await sql<ConfigRow[]>`select * from risk.alert_configs where ${live(t, sql)} order by created_at, id`).map(configOf);
    },
    active: sharedPerTurn(async (t) =>
      (await sql<ConfigRow[]>`select * from risk.alert_configs where ${live(t, sql)} and is_active order by created_at, id`).map(configOf),
    ),
    async remove(t, id, at) {
      const rows = await sql`update risk.alert_configs set deleted_at = ${at}, is_active = false where id = ${id} and ${live(t, sql)} returning id`;
      return rows.length === 1;
    },
  };
}

/** Records the alerts an evaluation fires, in its transaction. */
export async function insertAlerts(tx: Tx, evaluationId: string, alerts: readonly PendingAlert[]): Promise<void> {
  if (alerts.length === 0) return;
  const rows = alerts.map((a) => ({
    id: a.id,
    org_id: a.config.tenant.orgId,
    livemode: a.config.tenant.livemode,
    config_id: a.config.id,
    evaluation_id: evaluationId,
    alert_type: a.payload.alert_type,
    payload: a.payload as unknown as postgres.JSONValue,
    status: "pending",
  }));
  await tx`insert into risk.alert_deliveries ${tx(rows, "id", "org_id", "livemode", "config_id", "evaluation_id", "alert_type", "payload", "status")}`;
}

export function pgAlertDeliveryStore(sql: Sql): AlertDeliveryStore {
  return {
    async claimDue(limit, leaseMs) {
      const rows = await sql<(ConfigRow & { delivery_id: string; payload: AlertPayload; attempts: number })[]>`
        with due as (
          select id from risk.alert_deliveries where status = 'pending' and next_attempt_at <= now()
          order by next_attempt_at limit ${limit} for update skip locked
        ), claimed as (
          update risk.alert_deliveries d set next_attempt_at = now() + make_interval(secs => ${leaseMs / 1000})
          from due where d.id = due.id returning d.id, d.config_id, d.payload, d.attempts
        )
        select c.*, claimed.id as delivery_id, claimed.payload, claimed.attempts
        from claimed join risk.alert_configs c on c.id = claimed.config_id`;
      return rows.map((r): AlertDelivery => ({ id: r.delivery_id, config: configOf(r), payload: r.payload, attempts: r.attempts }));
    },
    async markSent(id) {
      await sql`update risk.alert_deliveries set status = 'sent', attempts = attempts + 1, sent_at = now(), last_error = null where id = ${id}`;
    },
    async markFailed(id, error, nextAt) {
      await sql`
        update risk.alert_deliveries set attempts = attempts + 1, last_error = ${error.slice(0, 1000)},
          status = ${nextAt === undefined ? "failed" : "pending"}, next_attempt_at = coalesce(${nextAt ?? null}::timestamptz, next_attempt_at)
        where id = ${id}`;
    },
  };
}
