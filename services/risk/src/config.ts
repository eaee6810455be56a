/** The risk service's own environment keys (the kit's BaseEnv comes first). process.env is read only here. */
import { z } from "zod";

export const RiskEnv = {
  /** Deadline of one ledger read (the sales figures of payout_ratio and refund_rate). */
  RISK_LEDGER_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(5_000),
  /** The SMTP server email alerts go through: `smtp://user:pass@host:port` or `smtps://…`. Unset: email alerts are refused. */
  RISK_SMTP_URL: z.string().min(1).optional(),
  /** The sender of alert emails. */
  RISK_ALERT_FROM: z.string().min(3).max(320).default("risk-alerts@treasury.invalid"),
  /** Deadline of one alert delivery (a webhook POST, an SMTP conversation). */
  RISK_ALERT_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(10_000),
  /** How often due alerts are sent; 0 turns the loop off. */
  RISK_ALERT_INTERVAL_MS: z.coerce.number().int().min(0).max(3_600_000).default(1_000),
  /** Alerts sent per pass. */
  RISK_ALERT_BATCH_MAX: z.coerce.number().int().min(1).max(1_000).default(50),
  /**
   * Alert webhooks may point at http://localhost and private addresses (local development and tests). Otherwise
   * they must be https to a host that is not localhost or a private, loopback or link-local address literal.
   */
  RISK_ALERT_ALLOW_PRIVATE_URLS: z.enum(["true", "false"]).default("false"),
};
