/**
 * The audit log of operator actions: how a command's row is written (with its change, or once its outcome is
 * known), and `admin audit list`, which reads it together with the KYC service's own append-only record of
 * review decisions (kyc.review_actions), newest first.
 */
import type postgres from "postgres";
import { DomainError } from "@treasury/contracts";
import { recordAudit, type AuditOutcome } from "../../services/gateway/src/admin.ts";
import type { AuditSpec, Command, Commands } from "./command.ts";
import type { Ctx, Q } from "./context.ts";

export const AUDIT_LIMIT_DEFAULT = 100;
export const AUDIT_LIMIT_MAX = 1_000;
const ACTOR_LENGTH_MAX = 255;
const REASON_LENGTH_MAX = 1_000;
/** An error's message is kept to this many characters (a driver's message can quote a whole statement). */
const ERROR_LENGTH_MAX = 2_000;

/** A command that failed, and, when that could not be recorded either, why. */
export class CommandFailed extends Error {
  constructor(
    readonly error: unknown,
    readonly auditError: unknown,
  ) {
    super(error instanceof Error ? error.message : String(error));
  }
}

export interface Ran {
  result: unknown;
  /** The action happened but its audit row could not be written (only for non-atomic commands). */
  auditError?: unknown;
}

export function checkActor(actor: string): string {
  const a = actor.trim();
  if (a === "" || a.length > ACTOR_LENGTH_MAX) throw new Error(`--actor must be 1–${ACTOR_LENGTH_MAX} characters`);
  return a;
}

export function checkReason(reason: string | undefined): string | undefined {
  const r = reason?.trim();
  if (r !== undefined && r.length > REASON_LENGTH_MAX) throw new Error(`--reason must be at most ${REASON_LENGTH_MAX} characters`);
  return r === "" ? undefined : r;
}

/** A timeout leaves the outcome open: the service may still have done it. */
function outcomeOf(err: unknown): AuditOutcome {
  return err instanceof DomainError && err.code === "service_timeout" ? "unknown" : "failed";
}

async function write(q: Q, spec: AuditSpec, ctx: Ctx, result: unknown, err?: unknown): Promise<void> {
  const t = await spec.target(ctx, q, result);
  await recordAudit(q, {
    actor: ctx.actor,
    action: spec.action,
    orgId: t.orgId,
    livemode: t.livemode,
    targetIds: t.targetIds,
    reason: ctx.reason,
    outcome: err === undefined ? "succeeded" : outcomeOf(err),
    errorCode: err instanceof DomainError ? err.code : null,
    error: err === undefined ? null : (err instanceof Error ? err.message : String(err)).slice(0, ERROR_LENGTH_MAX),
    details: { ...t.details, ...ctx.facts },
  });
}

async function failed(spec: AuditSpec, ctx: Ctx, err: unknown): Promise<CommandFailed> {
  try {
    await write(ctx.sql, spec, ctx, undefined, err);
    return new CommandFailed(err, undefined);
  } catch (auditError) {
    return new CommandFailed(err, auditError);
  }
}

/**
 * Runs a command and records it. A database change and its row commit together; a command whose work happens
 * in its own transaction or in another service is recorded right after its outcome. Failures are recorded too.
 * Throws CommandFailed.
 */
export async function runCommand(cmd: Command, ctx: Ctx): Promise<Ran> {
  const spec = cmd.audit;
  if (spec === undefined) {
    try {
      return { result: await cmd.run(ctx) };
    } catch (err) {
      throw new CommandFailed(err, undefined);
    }
  }
  if (spec.atomic) {
    try {
      const result: unknown = await ctx.sql.begin(async (tx) => {
        const inTx = { ...ctx, q: tx };
        const r = await cmd.run(inTx);
        await write(tx, spec, inTx, r);
        return r;
      });
      return { result };
    } catch (err) {
      throw await failed(spec, ctx, err);
    }
  }
  let result: unknown;
  try {
    result = await cmd.run(ctx);
  } catch (err) {
    throw await failed(spec, ctx, err);
  }
  if (spec.successKeptIn !== undefined) return { result };
  try {
    await write(ctx.sql, spec, ctx, result);
    return { result };
  } catch (auditError) {
    return { result, auditError };
  }
}

export interface AuditEntry {
  source: "gateway.audit_log" | "kyc.review_actions";
  id: string;
  at: Date;
  actor: string;
  action: string;
  org_id: string | null;
  livemode: boolean | null;
  target_ids: string[];
  reason: string | null;
  outcome: AuditOutcome;
  error_code: string | null;
  error: string | null;
  details: Record<string, unknown>;
}

export interface AuditFilter {
  orgId?: string | undefined;
  /** `key.revoke`, or a whole group: `key`. */
  action?: string | undefined;
  since?: Date | undefined;
  /** Rows naming any of these ids. */
  targets?: readonly string[] | undefined;
  limit: number;
}

function actionFilter(sql: Q, action: string | undefined): postgres.PendingQuery<postgres.Row[]> {
  if (action === undefined) return sql``;
  return action.includes(".") ? sql`and action = ${action}` : sql`and action like ${`${action}.%`}`;
}

async function fromAuditLog(sql: Q, f: AuditFilter): Promise<AuditEntry[]> {
  return sql<AuditEntry[]>`
    select 'gateway.audit_log' as source, id::text as id, at, actor, action, org_id, livemode, target_ids, reason, outcome,
           error_code, error, details
      from gateway.audit_log
     where true
       ${f.orgId === undefined ? sql`` : sql`and org_id = ${f.orgId}`}
       ${actionFilter(sql, f.action)}
       ${f.since === undefined ? sql`` : sql`and at >= ${f.since}`}
       ${f.targets === undefined ? sql`` : sql`and target_ids && ${[...f.targets]}::text[]`}
     order by at desc, id desc
     limit ${f.limit}`;
}

/** KYC decisions and personal-data views, as the kyc service recorded them with the decision itself. */
async function fromKycReviews(sql: Q, f: AuditFilter): Promise<AuditEntry[]> {
  if (f.action !== undefined && f.action !== "kyc" && !f.action.startsWith("kyc.")) return [];
  const [exists] = await sql<{ t: string | null }[]>`select to_regclass('kyc.review_actions')::text as t`;
  if (!exists?.t) return [];
  // The CLI's words for the kyc service's actions (`auto_approve` is the sandbox's own decision).
  const kycAction = f.action?.startsWith("kyc.") ? f.action.slice(4).replace(/-/g, "_") : undefined;
  const targets = f.targets === undefined ? undefined : [...f.targets];
  const rows = await sql<(Omit<AuditEntry, "target_ids" | "details" | "outcome" | "error_code" | "error"> & Record<string, string | null>)[]>`
    select 'kyc.review_actions' as source, id::text as id, created_at as at, actor, 'kyc.' || replace(action, '_', '-') as action,
           org_id, livemode, reason, submission_id, participant_id, event_id, subject, from_status, to_status
      from kyc.review_actions
     where true
       ${f.orgId === undefined ? sql`` : sql`and org_id = ${f.orgId}`}
       ${kycAction === undefined ? sql`` : sql`and action = ${kycAction}`}
       ${f.since === undefined ? sql`` : sql`and created_at >= ${f.since}`}
       ${targets === undefined ? sql`` : sql`and (submission_id = any(${targets}::text[]) or event_id = any(${targets}::text[]))`}
     order by created_at desc, id desc
     limit ${f.limit}`;
  return rows.map((r) => ({
    source: "kyc.review_actions",
    id: String(r.id),
    at: r.at,
    actor: r.actor,
    action: r.action,
    org_id: r.org_id,
    livemode: r.livemode,
    target_ids: [r["submission_id"], r["participant_id"], r["event_id"]].filter((x): x is string => typeof x === "string"),
    reason: r.reason,
    outcome: "succeeded",
    error_code: null,
    error: null,
    details: { subject: r["subject"], from_status: r["from_status"], to_status: r["to_status"] },
  }));
}

/** Both records, newest first, at most `limit` rows in all. */
export async function listAudit(sql: Q, f: AuditFilter): Promise<AuditEntry[]> {
  const [common, kyc] = await Promise.all([fromAuditLog(sql, f), fromKycReviews(sql, f)]);
  return [...common, ...kyc].sort((a, b) => b.at.getTime() - a.at.getTime() || (a.source === b.source ? Number(b.id) - Number(a.id) : 0)).slice(0, f.limit);
}

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

export const auditCommands: Commands = {
  "audit list": {
    usage: "audit list [--org ID] [--action GROUP|GROUP.COMMAND] [--since 2026-03-01|24h] [--target ID] [--limit N]   → {entries, count}, newest first",
    async run(ctx) {
      const action = ctx.values.action;
      if (action !== undefined && !/^[a-z]+(\.[a-z][a-z-]*)?$/.test(action))
        throw new Error("--action must be a command group (key) or group.command (key.revoke)");
      const entries = await listAudit(ctx.sql, {
        orgId: ctx.values.org,
        action,
        since: parseSince(ctx.values.since),
        targets: ctx.values.target === undefined ? undefined : [ctx.values.target],
        limit: parseLimit(ctx.values.limit, AUDIT_LIMIT_MAX, AUDIT_LIMIT_DEFAULT),
      });
      return { entries, count: entries.length };
    },
  },
};
