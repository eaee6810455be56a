/**
 * In-memory fakes of the risk use cases' ports (usecases/ports.ts), for unit tests. The evaluation store keeps the
 * store's contract: one evaluation per (tenant, source, key), counters read over their windows, counter rows only
 * for what `decide` says was counted. Concurrency is the PostgreSQL store's, proven by its integration tests.
 */
import { schemas, type Tenant } from "@treasury/contracts";
import type { AlertConfig, AlertPayload } from "../src/domain/alerts.ts";
import type { Evaluation } from "../src/domain/evaluations.ts";
import type { Policy } from "../src/domain/policies.ts";
import type { SalesActivity } from "../src/domain/rules.ts";
import type { AlertConfigStore, AlertDeliveryStore, EvaluationStore, PendingAlert, PendingEvent, PolicyStore, RiskDeps } from "../src/usecases/ports.ts";

const same = (a: Tenant, b: Tenant) => a.orgId === b.orgId && a.livemode === b.livemode;

export interface Fakes {
  deps: RiskDeps;
  events: PendingEvent[];
  alerts: PendingAlert[];
  counted: { counter: string; at: Date; amount: number }[];
  sent: { config: AlertConfig; payload: AlertPayload }[];
  ledgerReads: number;
  sales: SalesActivity;
  /** Makes the alert sender throw with this reason. */
  failSending: string | undefined;
  clock: { now: Date };
}

function policyStore(policies: Policy[], deleted: Set<string>): PolicyStore {
  const live = (t: Tenant) => policies.filter((p) => same(p.tenant, t) && !deleted.has(p.id));
  return {
    insert: async (p) => void policies.push(p),
    countLive: async (t) => live(t).length,
    list: async (t, q) => {
      const all = live(t).filter((p) => q.policyType === undefined || p.policyType === q.policyType);
      return { policies: all.slice(q.offset, q.offset + q.limit), total: all.length };
    },
    enabled: async (t) => live(t).filter((p) => p.enabled),
    remove: async (t, id) => {
      const p = live(t).find((x) => x.id === id);
      if (p !== undefined) deleted.add(id);
      return p;
    },
  };
}

function evaluationStore(f: Fakes, rows: Evaluation[]): EvaluationStore {
  const byKey = (t: Tenant, source: string, key: string) => rows.find((e) => same(e.tenant, t) && e.source === source && e.key === key);
  return {
    get: async (t, id) => rows.find((e) => same(e.tenant, t) && e.id === id),
    getById: async (id) => rows.find((e) => e.id === id),
    async record(tenant, source, key, counters, decide) {
      const existing = byKey(tenant, source, key);
      if (existing !== undefined) return { evaluation: existing, duplicate: true };
      const states = new Map(
        counters.map((c) => {
          const hits = f.counted.filter((x) => x.counter === c.counter && x.at > c.since);
          return [c.counter, { count: hits.length, amount: hits.reduce((s, x) => s + x.amount, 0) }];
        }),
      );
      const rec = decide(states);
      rows.push(rec.evaluation);
      for (const c of rec.counted) f.counted.push({ counter: c.counter, at: rec.evaluation.createdAt, amount: rec.evaluation.proposal.amount });
      if (rec.event !== undefined) f.events.push(rec.event);
      f.alerts.push(...rec.alerts);
      return { evaluation: rec.evaluation, duplicate: false };
    },
    reviewQueue: async (q) => rows.filter((e) => e.review?.status === q.status && (q.orgId === undefined || e.tenant.orgId === q.orgId)).slice(0, q.limit),
    async decide(id, decision, by, event) {
      const i = rows.findIndex((e) => e.id === id && e.review?.status === "pending");
      const found = rows[i];
      if (found === undefined) return undefined;
      const decided: Evaluation = { ...found, review: { status: decision, actor: by.actor, reason: by.reason, decidedAt: by.at } };
      rows[i] = decided;
      f.events.push(event(decided));
      return decided;
    },
  };
}

function alertConfigStore(configs: AlertConfig[]): AlertConfigStore {
  const live = (t: Tenant) => configs.filter((c) => same(c.tenant, t));
  return {
    insert: async (c) => void configs.push(c),
    update: async (c) =>
      void configs.splice(
        configs.findIndex((x) => x.id === c.id),
        1,
        c,
      ),
    get: async (t, id) => live(t).find((c) => c.id === id),
    list: async (t) => live(t),
    active: async (t) => live(t).filter((c) => c.isActive),
    remove: async (t, id) => {
      const i = configs.findIndex((c) => c.id === id && same(c.tenant, t));
      if (i >= 0) configs.splice(i, 1);
      return i >= 0;
    },
  };
}

const unusedDeliveries: AlertDeliveryStore = {
  claimDue: async () => [],
  markSent: async () => undefined,
  markFailed: async () => undefined,
};

export function fakes(): Fakes {
  let seq = 0;
  const f: Fakes = {
    events: [],
    alerts: [],
    counted: [],
    sent: [],
    ledgerReads: 0,
    sales: { sales_count: 0, gross_cents: 0, refunded_cents: 0 },
    failSending: undefined,
    clock: { now: new Date("2026-05-20T12:00:00Z") },
    deps: undefined as unknown as RiskDeps,
  };
  f.deps = {
    policies: policyStore([], new Set()),
    evaluations: evaluationStore(f, []),
    alertConfigs: alertConfigStore([]),
    alertDeliveries: unusedDeliveries,
    alertSender: {
      send: async (config, payload) => {
        if (f.failSending !== undefined) throw new Error(f.failSending);
        f.sent.push({ config, payload });
      },
    },
    failModes: { get: async () => ({ ...schemas.DEFAULT_RISK_FAIL_MODES }) },
    ledger: {
      salesActivity: async () => {
        f.ledgerReads += 1;
        return f.sales;
      },
    },
    now: () => f.clock.now,
    newId: (kind) => `${{ policy: "fpol", evaluation: "feval", alertConfig: "falrt", alertDelivery: "fald" }[kind]}_${++seq}`,
    allowPrivateAlertUrls: false,
  };
  return f;
}
