/**
 * `admin audit list`: every service's record of the operator actions it performed (its audit_log, and the kyc
 * service's own record of review decisions), asked of each and merged, newest first.
 */
import { AUDIT_LIMIT_MAX } from "@treasury/contracts";
import { listAudit, type AdminClient } from "@treasury/service-kit/operator-client";
import type { Values } from "./context.ts";

export const AUDIT_LIMIT_DEFAULT = 100;

/** `--since`: an ISO date or time, or an age such as `30m`, `12h`, `7d`. */
export function parseSince(value: string | undefined, now = new Date()): Date | undefined {
  if (value === undefined) return undefined;
  const age = /^(\d{1,6})([mhd])$/.exec(value);
  if (age !== null) {
    const unitMs = { m: 60_000, h: 3_600_000, d: 86_400_000 }[age[2] as "m" | "h" | "d"];
    return new Date(now.getTime() - Number(age[1]) * unitMs);
  }
  const at = /^\d{4}-\d{2}-\d{2}(T[\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(value) ? new Date(value) : new Date(Number.NaN);
  if (Number.isNaN(at.getTime())) throw new Error("--since must be an ISO date or time (2026-03-01, 2026-03-01T12:00:00Z) or an age (30m, 12h, 7d)");
  return at;
}

export function parseLimit(value: string | undefined, max: number, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > max) throw new Error(`--limit must be an integer from 1 to ${max}`);
  return n;
}

export async function auditListCommand(client: AdminClient, values: Values): Promise<Record<string, unknown>> {
  const action = values.action;
  if (action !== undefined && !/^[a-z]+(\.[a-z][a-z-]*)?$/.test(action))
    throw new Error("--action must be a command group (key) or group.command (key.revoke)");
  const since = parseSince(values.since);
  const { entries, unanswered } = await listAudit(client, {
    ...(values.org === undefined ? {} : { org_id: values.org }),
    ...(action === undefined ? {} : { action }),
    ...(since === undefined ? {} : { since: since.toISOString() }),
    ...(values.target === undefined ? {} : { targets: [values.target] }),
    limit: parseLimit(values.limit, AUDIT_LIMIT_MAX, AUDIT_LIMIT_DEFAULT),
  });
  return { entries, count: entries.length, ...(unanswered.length === 0 ? {} : { unanswered }) };
}
