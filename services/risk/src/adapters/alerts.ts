/**
 * The alert channels: a webhook (a JSON POST to the config's URL, bounded by a timeout, no redirects followed) and
 * email through an SMTP server (RISK_SMTP_URL) with nodemailer. A channel that is not configured refuses to send,
 * with a reason the `test` action shows.
 */
import nodemailer from "nodemailer";
import { alertSubject, type AlertConfig, type AlertPayload } from "../domain/alerts.ts";
import type { AlertSender } from "../usecases/ports.ts";

export interface AlertChannelsConfig {
  /** `smtp://user:pass@host:port` or `smtps://…`; undefined: email alerts cannot be sent. */
  smtpUrl: string | undefined;
  from: string;
  timeoutMs: number;
}

async function postWebhook(url: string, payload: AlertPayload, timeoutMs: number): Promise<void> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", "user-agent": "treasury-risk-alerts" },
    body: JSON.stringify(payload),
    redirect: "manual",
    signal: AbortSignal.timeout(timeoutMs),
  });
  await res.body?.cancel();
  if (res.status < 200 || res.status >= 300) throw new Error(`webhook answered HTTP ${res.status}`);
}

function emailText(payload: AlertPayload): string {
  const e = payload.evaluation;
  const lines = [alertSubject(payload), ""];
  if (e !== null) {
    lines.push(`evaluation: ${e.id}`, `operation: ${e.operation} (${e.key})`, `amount: ${e.amount} cents ${e.currency}`, `decision: ${e.decision}`);
    for (const h of e.hits) lines.push(`- ${h.policy_type} (${h.severity}, ${h.policy_id}): ${h.reason}`);
  }
  lines.push("", `org: ${payload.org_id} (${payload.livemode ? "live" : "sandbox"})`, `at: ${payload.created_at}`);
  return lines.join("\n");
}

export function alertChannels(cfg: AlertChannelsConfig): AlertSender & { close(): void } {
  const transport =
    cfg.smtpUrl === undefined
      ? undefined
      : nodemailer.createTransport({ url: cfg.smtpUrl, connectionTimeout: cfg.timeoutMs, greetingTimeout: cfg.timeoutMs, socketTimeout: cfg.timeoutMs });
  return {
    async send(config: AlertConfig, payload: AlertPayload) {
      if (config.channel === "webhook") {
        if (config.webhookUrl === null) throw new Error("the config has no webhook_url");
        return postWebhook(config.webhookUrl, payload, cfg.timeoutMs);
      }
      if (transport === undefined) throw new Error("email alerts are not configured on this deployment (RISK_SMTP_URL)");
      await transport.sendMail({ from: cfg.from, to: config.recipients, subject: alertSubject(payload), text: emailText(payload), headers: {} });
    },
    close: () => transport?.close(),
  };
}
