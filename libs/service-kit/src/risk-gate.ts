/**
 * The risk service as the money path sees it: one question (`svc.risk.internal.evaluate`) before money moves, with
 * a deadline. A deny is refused here (422 risk_denied with the evaluation's id); an allow or a review goes back to
 * the caller (only payouts hold a review). When risk does not answer in time, or at all, the org's fail mode for
 * the operation decides: `open` lets the movement go ahead unevaluated, `closed` refuses it (503 risk_unavailable,
 * nothing moved). Either way the movement is recorded in `<schema>.risk_fail_safes` and counted in
 * `risk_fail_safe_total`. The modes come with every evaluation answer and are kept in `<schema>.risk_fail_modes`, so
 * a replica that restarted while risk is down still follows the org's setting (defaults: DEFAULT_RISK_FAIL_MODES).
 */
import { DomainError, internalSubject, schemas, type Tenant } from "@treasury/contracts";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "pino";
import { Counter, type Registry } from "prom-client";
import type { Sql } from "./db.ts";
import { rpcCall } from "./rpc-client.ts";

type Operation = schemas.MoneyRiskOperation;
type FailModes = Record<Operation, schemas.RiskFailMode>;
export type RiskProposal = Omit<schemas.RiskEvaluateRequest, "org_id" | "livemode">;

/** What the caller goes on with: allowed (evaluated or failed open), or held for an operator's review. */
export interface RiskVerdict {
  decision: "allow" | "review";
  /** The evaluation's id; null when risk did not answer and the org's fail mode let the movement go. */
  evaluationId: string | null;
  failedOpen: boolean;
}

export interface RiskGate {
  /** Errors: risk_denied (422), risk_unavailable (503, fail mode closed). */
  check(tenant: Tenant, proposal: RiskProposal): Promise<RiskVerdict>;
}

export interface RiskGateOptions {
  caller: string;
  deadlineMs: number;
  sql: Sql;
  schema: string;
  log: Logger;
  metrics: Registry;
}

/** The gate of a service built by the kit: its connection, pool, schema, logger, metrics and RISK_DEADLINE_MS. */
export function riskGateFor(svc: {
  name: string;
  nc: NatsConnection;
  prefix: string;
  sql: Sql;
  log: Logger;
  metrics: Registry;
  config: { RISK_DEADLINE_MS: number };
}): RiskGate {
  return natsRiskGate(svc.nc, svc.prefix, {
    caller: svc.name,
    deadlineMs: svc.config.RISK_DEADLINE_MS,
    sql: svc.sql,
    schema: svc.name,
    log: svc.log,
    metrics: svc.metrics,
  });
}

const AVAILABILITY = new Set(["service_timeout", "service_unavailable"]);

export function natsRiskGate(nc: NatsConnection, prefix: string, opts: RiskGateOptions): RiskGate {
  const subject = internalSubject(prefix, "risk", schemas.RISK_EVALUATE_OPERATION);
  const modes = new FailModeCopy(opts.sql, opts.schema);
  const decisions = new Counter({
    name: "risk_decisions_total",
    help: "Risk answers to this service's money movements, by operation and decision",
    labelNames: ["operation", "decision"] as const,
    registers: [opts.metrics],
  });
  const failSafes = new Counter({
    name: "risk_fail_safe_total",
    help: "Money movements decided by the org's fail mode because risk did not answer in time",
    labelNames: ["operation", "mode"] as const,
    registers: [opts.metrics],
  });

  const failSafe = async (tenant: Tenant, proposal: RiskProposal, cause: string): Promise<RiskVerdict> => {
    const mode = (await modes.get(tenant).catch(() => schemas.DEFAULT_RISK_FAIL_MODES))[proposal.operation];
    failSafes.inc({ operation: proposal.operation, mode });
    opts.log.warn({ operation: proposal.operation, key: proposal.key, mode, cause }, "risk did not answer; the org's fail mode decides");
    await opts.sql`
      insert into ${opts.sql(`${opts.schema}.risk_fail_safes`)} (org_id, livemode, key, operation, amount, mode, cause)
      values (${tenant.orgId}, ${tenant.livemode}, ${proposal.key}, ${proposal.operation}, ${proposal.amount}, ${mode}, ${cause})
      on conflict do nothing`.catch((err: unknown) => opts.log.error({ err, key: proposal.key }, "recording a fail-safe decision failed"));
    if (mode === "open") return { decision: "allow", evaluationId: null, failedOpen: true };
    throw new DomainError("risk_unavailable", undefined, {
      hint: "Retry the request with the same idempotency key; this movement waits for a risk check (fail mode closed)",
    });
  };

  return {
    async check(tenant, proposal) {
      const payload = { ...proposal, org_id: tenant.orgId, livemode: tenant.livemode };
      const reply = await rpcCall(nc, subject, payload, { timeoutMs: opts.deadlineMs }).catch((err: unknown) => {
        opts.log.warn({ err }, "risk call failed");
        return undefined;
      });
      if (reply === undefined) return failSafe(tenant, proposal, "call_failed");
      if (!reply.ok) {
        if (AVAILABILITY.has(reply.error.code)) return failSafe(tenant, proposal, reply.error.code);
        // Anything else is this service's request being wrong: a defect, not a reason to move or refuse money.
        throw new Error(`risk refused the evaluation request: ${reply.error.code} ${reply.error.message}`);
      }
      const body = reply.body as { evaluation: schemas.RiskEvaluation; fail_modes?: FailModes };
      if (body.fail_modes !== undefined) modes.learn(tenant, body.fail_modes);
      const e = body.evaluation;
      decisions.inc({ operation: proposal.operation, decision: e.decision });
      if (e.decision === "deny") {
        throw new DomainError("risk_denied", `Denied by ${e.hits.length === 1 ? "a risk policy" : `${e.hits.length} risk policies`}`, {
          hint: "GET /v1/fraud/evaluations/{evaluation_id} shows the policies it hit",
          extra: {
            evaluation_id: e.id,
            hits: e.hits.filter((h) => h.severity === "hard").map((h) => ({ policy_id: h.policy_id, policy_type: h.policy_type, reason: h.reason })),
          },
        });
      }
      return { decision: e.decision, evaluationId: e.id, failedOpen: false };
    },
  };
}

/** The orgs' fail modes as last answered: in memory, and stored when they change (read back after a restart). */
class FailModeCopy {
  private readonly known = new Map<string, string>();

  constructor(
    private readonly sql: Sql,
    private readonly schema: string,
  ) {}

  learn(tenant: Tenant, modes: FailModes): void {
    const k = `${tenant.orgId}\u0000${tenant.livemode}`;
    const text = JSON.stringify(modes);
    if (this.known.get(k) === text) return;
    this.known.set(k, text);
    void this.sql`
      insert into ${this.sql(`${this.schema}.risk_fail_modes`)} (org_id, livemode, modes) values (${tenant.orgId}, ${tenant.livemode}, ${this.sql.json(modes)})
      on conflict (org_id, livemode) do update set modes = excluded.modes, updated_at = now()`.catch(() => this.known.delete(k));
  }

  async get(tenant: Tenant): Promise<FailModes> {
    const k = `${tenant.orgId}\u0000${tenant.livemode}`;
    const mem = this.known.get(k);
    if (mem !== undefined) return JSON.parse(mem) as FailModes;
    const [row] = await this.sql<{ modes: FailModes }[]>`
      select modes from ${this.sql(`${this.schema}.risk_fail_modes`)} where org_id = ${tenant.orgId} and livemode = ${tenant.livemode}`;
    return { ...schemas.DEFAULT_RISK_FAIL_MODES, ...(row?.modes ?? {}) };
  }
}
