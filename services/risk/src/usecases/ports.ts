/**
 * Everything the risk use cases need, and nothing else: stores (store/ implements them on PostgreSQL), the ledger's
 * sales figures (adapters/ledger.ts), the alert channels (adapters/alerts.ts) and the clock. Unit tests run the use
 * cases on the in-memory fakes of test/fakes.ts.
 */
import type { EventType, schemas, Tenant } from "@treasury/contracts";
import type { AlertConfig, AlertPayload } from "../domain/alerts.ts";
import type { CounterNeed } from "../domain/counters.ts";
import type { Evaluation, EvaluationSource, ReviewDecision, ReviewStatus } from "../domain/evaluations.ts";
import type { Policy, PolicyType } from "../domain/policies.ts";
import type { CounterState, SalesActivity } from "../domain/rules.ts";

export interface PolicyStore {
  insert(policy: Policy): Promise<void>;
  /** Policies not deleted, enabled or not. */
  countLive(tenant: Tenant): Promise<number>;
  list(tenant: Tenant, q: { policyType: PolicyType | undefined; limit: number; offset: number }): Promise<{ policies: Policy[]; total: number }>;
  /** The enabled policies of a tenant: one indexed read, the first of every evaluation. */
  enabled(tenant: Tenant): Promise<Policy[]>;
  /** Marks it deleted and answers it; undefined when the tenant has no such live policy. */
  remove(tenant: Tenant, id: string, at: Date): Promise<Policy | undefined>;
}

/** An event to write with the change, in its transaction (the kit's outbox). */
export interface PendingEvent {
  type: EventType;
  data: Record<string, unknown>;
}

/** An alert to send after the evaluation commits (jobs/alerts.ts sends it). */
export interface PendingAlert {
  id: string;
  config: AlertConfig;
  payload: AlertPayload;
}

/** What an evaluation writes: the row with its hits, the counters it takes in, its event and its alerts. */
export interface EvaluationRecord {
  evaluation: Evaluation;
  /** Counters the movement counts in: none when it was denied (no money moves). */
  counted: CounterNeed[];
  event: PendingEvent | undefined;
  alerts: PendingAlert[];
}

export interface Recorded {
  evaluation: Evaluation;
  /** The key had an evaluation already: it is answered, and nothing was written or counted. */
  duplicate: boolean;
}

export interface ReviewFilter {
  orgId: string | undefined;
  livemode: boolean | undefined;
  status: ReviewStatus;
  limit: number;
}

export interface EvaluationStore {
  get(tenant: Tenant, id: string): Promise<Evaluation | undefined>;
  /** Any tenant's (operators' commands name the evaluation only). */
  getById(id: string): Promise<Evaluation | undefined>;
  /**
   * A key recorded before answers its evaluation as a duplicate (nothing written or counted). Otherwise one
   * transaction locks the counters in ascending order; `decide` gets their state over each one's window and
   * answers what to write. Two evaluations sharing a counter are serialised (or decided one after the other in
   * one batch), so a limit is exact under any concurrency.
   */
  record(
    tenant: Tenant,
    source: EvaluationSource,
    key: string,
    counters: readonly CounterNeed[],
    decide: (states: ReadonlyMap<string, CounterState>) => EvaluationRecord,
  ): Promise<Recorded>;
  reviewQueue(filter: ReviewFilter): Promise<Evaluation[]>;
  /**
   * Records an operator's decision on an evaluation under review with its event, in one transaction; undefined when
   * the evaluation is not pending any more (decided meanwhile).
   */
  decide(
    id: string,
    decision: ReviewDecision,
    by: { actor: string; reason: string | null; at: Date },
    event: (decided: Evaluation) => PendingEvent,
  ): Promise<Evaluation | undefined>;
}

export interface AlertConfigStore {
  insert(config: AlertConfig): Promise<void>;
  update(config: AlertConfig): Promise<void>;
  get(tenant: Tenant, id: string): Promise<AlertConfig | undefined>;
  list(tenant: Tenant): Promise<AlertConfig[]>;
  /** Active configs of a tenant (an evaluation reads them before it records its alerts). */
  active(tenant: Tenant): Promise<AlertConfig[]>;
  remove(tenant: Tenant, id: string, at: Date): Promise<boolean>;
}

export interface AlertDelivery {
  id: string;
  config: AlertConfig;
  payload: AlertPayload;
  attempts: number;
}

export interface AlertDeliveryStore {
  /** Takes up to `limit` due alerts for `leaseMs` (a replica that dies leaves them due again afterwards). */
  claimDue(limit: number, leaseMs: number): Promise<AlertDelivery[]>;
  markSent(id: string): Promise<void>;
  /** Another attempt at `nextAt`, or failed for good when `nextAt` is undefined. */
  markFailed(id: string, error: string, nextAt: Date | undefined): Promise<void>;
}

/** Sends one alert through its config's channel; throws with a reason the log and the `test` answer can show. */
export interface AlertSender {
  send(config: AlertConfig, payload: AlertPayload): Promise<void>;
}

/** The ledger's sales figures (svc.ledger.internal.salesActivity). Throws service_unavailable when it cannot answer. */
export interface LedgerActivity {
  salesActivity(tenant: Tenant, participantId: string | undefined, windowDays: number): Promise<SalesActivity>;
}

/** What each money movement of a tenant does when risk does not answer in time. */
export type FailModes = Record<schemas.MoneyRiskOperation, schemas.RiskFailMode>;

export interface FailModeReader {
  get(tenant: Tenant): Promise<FailModes>;
}

export interface RiskDeps {
  policies: PolicyStore;
  evaluations: EvaluationStore;
  alertConfigs: AlertConfigStore;
  alertDeliveries: AlertDeliveryStore;
  alertSender: AlertSender;
  ledger: LedgerActivity;
  failModes: FailModeReader;
  /** The tenant's time: real time in live, the org's test clock in sandbox (ADR 0017). */
  now(tenant: Tenant): Date;
  newId(kind: "policy" | "evaluation" | "alertConfig" | "alertDelivery"): string;
  /** Alert webhooks may point at private addresses (development and tests: RISK_ALERT_ALLOW_PRIVATE_URLS). */
  allowPrivateAlertUrls: boolean;
}
