/**
 * Operator commands answered by the service that owns what they change (`svc.handleAdmin`), and their audit rows
 * in the service's own `audit_log` (a kit table: migrate.ts). A command whose change is a database write of its
 * own runs in one transaction with its row; one whose work opens its own transactions (or calls out) is recorded
 * once its outcome is known. Failures are recorded too, with the error. The CLI only sends flags and prints the
 * answer (ADR 0016), so whatever the operator ran, the row is written by the process that did the work.
 */
import type { Logger } from "pino";
import type postgres from "postgres";
import { adminAction, AdminRequest, DomainError, parseOrThrow, type AuditOutcome, type Tenant } from "@treasury/contracts";
import type { Sql, Tx } from "./db.ts";

/** An error's message is kept to this many characters (a driver's message can quote a whole statement). */
const ERROR_LENGTH_MAX = 2_000;

/** Where an action landed: its org and environment when it has one, and every id it touched. */
export interface AuditTarget {
  orgId?: string | null | undefined;
  livemode?: boolean | null | undefined;
  targetIds: readonly (string | null | undefined)[];
  /** What the command was given and answered that helps later readers; never a secret. */
  details?: Record<string, unknown> | undefined;
}

export interface AdminCall<T> {
  input: T;
  actor: string;
  reason: string | undefined;
  requestId: string;
  log: Logger;
  /** Where a change goes: the transaction that also writes the audit row for an atomic command, else the pool. */
  q: Sql | Tx;
  /** A file the CLI read and sent (its one positional argument). */
  file: { name: string; content: string } | undefined;
}

export interface AdminAudit<T> {
  /** The row's action when it is not the command's own name (a record kept under an older name). */
  action?: string;
  /**
   * The change is a database write made through `call.q`: it and its row commit in one transaction. Otherwise the
   * row is written once the outcome is known.
   */
  atomic: boolean;
  /**
   * Successes are already kept, in the transaction of the change, by the service's own record named here (KYC
   * decisions in kyc.review_actions, which the service's `audit list` answer includes): only failures get a row.
   */
  successKeptIn?: string;
  /** The row's org, environment, ids and details. `input` and `result` are undefined when not known (a failure). */
  target(seen: { input: T | undefined; request: AdminRequest }, result: Record<string, unknown> | undefined, q: Sql | Tx): AuditTarget | Promise<AuditTarget>;
}

export interface AdminCommand<T> {
  /** The flags as typed, checked: throws validation_error (the kit answers it, and records the attempt). */
  decode(request: AdminRequest): T;
  audit?: AdminAudit<T>;
  run(call: AdminCall<T>): Promise<Record<string, unknown>>;
}

/** The string value of `--name`, or undefined. */
export function flag(request: AdminRequest, name: string): string | undefined {
  const v = request.flags[name];
  return typeof v === "string" ? v : undefined;
}

/** The string value of `--name`; a validation error naming the flag when it is missing. */
export function requiredFlag(request: AdminRequest, name: string): string {
  const v = flag(request, name);
  if (v === undefined || v === "") throw new DomainError("validation_error", `missing --${name}`);
  return v;
}

/** `--name` given without a value. */
export function booleanFlag(request: AdminRequest, name: string): boolean {
  return request.flags[name] === true;
}

/** `--env test|live` as the platform's environment. */
export function environmentFlag(request: AdminRequest): { env: "test" | "live"; livemode: boolean } {
  const env = requiredFlag(request, "env");
  if (env !== "test" && env !== "live") throw new DomainError("validation_error", "--env must be test or live");
  return { env, livemode: env === "live" };
}

/** The org and environment a per-org setting command names (`--env` is checked first, then `--org`). */
export function orgEnvironmentFlags(request: AdminRequest): Tenant & { env: "test" | "live" } {
  const { env, livemode } = environmentFlag(request);
  return { env, orgId: requiredFlag(request, "org"), livemode };
}

/**
 * The audit target of a per-org setting, from the flags as typed, so an attempt that failed its checks is
 * recorded with what it named.
 */
export function orgEnvironmentTarget(request: AdminRequest, details: Record<string, unknown>): AuditTarget {
  const org = flag(request, "org");
  const env = flag(request, "env");
  return {
    orgId: org ?? null,
    livemode: env === "live" ? true : env === "test" ? false : null,
    targetIds: org === undefined ? [] : [org],
    details,
  };
}

/** A timeout of a call the command made leaves the outcome open: the other service may still have done it. */
function outcomeOf(err: unknown): AuditOutcome {
  return err instanceof DomainError && err.code === "service_timeout" ? "unknown" : "failed";
}

interface Row {
  actor: string;
  action: string;
  reason: string | undefined;
  target: AuditTarget;
  requestId: string;
  err?: unknown;
}

async function writeAudit(q: Sql | Tx, schema: string, r: Row): Promise<void> {
  const t = r.target;
  const targets = [...new Set(t.targetIds.filter((x): x is string => typeof x === "string" && x !== ""))];
  const err = r.err;
  const details = { ...t.details, request_id: r.requestId };
  await q`
    insert into ${q(`${schema}.audit_log`)} (actor, action, org_id, livemode, target_ids, reason, outcome, error_code, error, details)
    values (${r.actor}, ${r.action}, ${t.orgId ?? null}, ${t.livemode ?? null}, ${targets}::text[], ${r.reason ?? null},
            ${err === undefined ? "succeeded" : outcomeOf(err)}, ${err instanceof DomainError ? err.code : null},
            ${err === undefined ? null : (err instanceof Error ? err.message : String(err)).slice(0, ERROR_LENGTH_MAX)},
            ${q.json(details as postgres.JSONValue)})`;
}

export interface AdminRunnerDeps {
  sql: Sql;
  schema: string;
  log: Logger;
}

/** Runs one command for its request and records it; answers the command's body, or throws what it threw. */
export async function runAdmin<T>(
  deps: AdminRunnerDeps,
  command: string,
  spec: AdminCommand<T>,
  payload: unknown,
  ctx: { requestId: string; log: Logger },
): Promise<Record<string, unknown>> {
  const request = parseOrThrow(AdminRequest, payload, "admin request");
  const audit = spec.audit;
  const action = audit?.action ?? adminAction(command);
  const base = { actor: request.actor, action, reason: request.reason, requestId: ctx.requestId };
  let input: T | undefined;
  const call = (q: Sql | Tx, value: T): AdminCall<T> => ({ ...base, input: value, q, file: request.file, log: ctx.log });
  try {
    input = spec.decode(request);
    const decoded = input;
    if (audit?.atomic === true) {
      return await deps.sql.begin(async (tx) => {
        const result = await spec.run(call(tx, decoded));
        await writeAudit(tx, deps.schema, { ...base, target: await audit.target({ input: decoded, request }, result, tx) });
        return result;
      });
    }
    const result = await spec.run(call(deps.sql, decoded));
    if (audit !== undefined && audit.successKeptIn === undefined) await recordAfter(deps, audit, { ...base, request, input: decoded, result });
    return result;
  } catch (err) {
    if (audit !== undefined) await recordAfter(deps, audit, { ...base, request, input, err });
    throw err;
  }
}

/**
 * A row written after the outcome. When it cannot be written the outcome stands (the change happened, or the
 * failure is answered): the service logs it at error level for the operator's alerting.
 */
async function recordAfter<T>(
  deps: AdminRunnerDeps,
  audit: AdminAudit<T>,
  r: Omit<Row, "target"> & { request: AdminRequest; input: T | undefined; result?: Record<string, unknown> },
): Promise<void> {
  try {
    const target = await audit.target({ input: r.input, request: r.request }, r.result, deps.sql);
    await writeAudit(deps.sql, deps.schema, { ...r, target });
  } catch (auditError) {
    deps.log.error({ err: auditError, action: r.action, request_id: r.requestId }, "operator action completed but its audit row could not be written");
  }
}
