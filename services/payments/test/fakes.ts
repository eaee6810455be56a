/**
 * In-memory stand-ins for the ports of usecases/ports.ts, for unit tests of the use cases: no PostgreSQL, no NATS.
 * The record stores keep rows in maps and honour the same conditions as the SQL (a settle moves only a row in the
 * expected state, a transaction that throws leaves nothing behind); the ledger is fake-ledger.ts.
 */
import type { Tenant } from "@treasury/contracts";
import type { NewEvent } from "@treasury/service-kit";
import { pino } from "pino";
import { recordedCheckout } from "../src/domain/records.ts";
import type {
  CheckoutRow,
  DisputeRow,
  ProcessorEventRow,
  ProcessorRefundRow,
  ReversalRow,
  SpendRow,
  TopupRow,
  WalletSessionRow,
} from "../src/domain/records.ts";
import type { PaymentsDeps } from "../src/usecases/deps.ts";
import { FakeLedger } from "./fake-ledger.ts";
import type {
  CheckoutProvider,
  CheckoutStore,
  DisputeStore,
  ProcessorEventStore,
  ProcessorRefundStore,
  SpendStore,
  TopupStore,
  WalletSessionStore,
} from "../src/usecases/ports.ts";

const ofTenant = (row: { org_id: string; livemode: boolean }, t: Tenant): boolean => row.org_id === t.orgId && row.livemode === t.livemode;
const copy = <T extends object>(row: T | undefined): T | undefined => (row === undefined ? undefined : { ...row });
const olderThan = (at: Date, graceMs: number): boolean => at.getTime() <= Date.now() - graceMs;

/** Runs `fn` as a transaction over `state`: what it changed is undone when it throws. */
async function transaction<T>(state: { snapshot(): () => void }, fn: () => Promise<T>): Promise<T> {
  const restore = state.snapshot();
  try {
    return await fn();
  } catch (e) {
    restore();
    throw e;
  }
}

export class FakeCheckouts implements CheckoutStore {
  readonly rows = new Map<string, CheckoutRow>();
  readonly events: NewEvent[] = [];

  snapshot(): () => void {
    const rows = [...this.rows.values()].map((r) => ({ ...r }));
    const events = this.events.length;
    return () => {
      this.rows.clear();
      for (const r of rows) this.rows.set(r.id, r);
      this.events.length = events;
    };
  }

  private update(id: string, fields: Partial<CheckoutRow>): CheckoutRow {
    const row = this.rows.get(id);
    if (row === undefined) throw new Error(`no checkout ${id}`);
    const next = { ...row, ...fields, updated_at: new Date() };
    this.rows.set(id, next);
    return { ...next };
  }

  async insert(c: Parameters<CheckoutStore["insert"]>[0]) {
    const taken = [...this.rows.values()].some(
      (r) => c.idempotency_key !== null && r.idempotency_key === c.idempotency_key && r.org_id === c.org_id && r.livemode === c.livemode,
    );
    if (taken) return undefined;
    const row = recordedCheckout(c, c.created_at);
    this.rows.set(row.id, row);
    return { ...row };
  }
  find = async (t: Tenant, id: string) => copy([...this.rows.values()].find((r) => r.id === id && ofTenant(r, t)));
  findForPage = async (id: string) => copy(this.rows.get(id));
  findByKey = async (t: Tenant, key: string) => copy([...this.rows.values()].find((r) => r.idempotency_key === key && ofTenant(r, t)));
  findByPayment = async (pi: string | null, charge: string | null) =>
    copy([...this.rows.values()].find((r) => (pi !== null && r.processor_payment_intent === pi) || (charge !== null && r.processor_charge === charge)));
  async storeCreateResponse(id: string, response: Record<string, unknown>) {
    if (this.rows.get(id)?.create_response === null) this.update(id, { create_response: response });
  }
  markCompleting: CheckoutStore["markCompleting"] = async (t, id, now, intent) => {
    const row = this.rows.get(id);
    if (row === undefined || !ofTenant(row, t) || row.status !== "pending") return undefined;
    if (intent.processor === null && row.expires_at.getTime() <= now.getTime()) return undefined;
    const p = intent.processor;
    return this.update(id, {
      status: "completing",
      ledger_reference: intent.ledger_reference,
      payment_id: row.payment_id ?? p?.sessionId ?? (row.mode === "direct_funded_wallet" ? intent.payment_id_by_mode.wallet : intent.payment_id_by_mode.other),
      completion_source: intent.completion_source,
      sandbox_idempotency_key: intent.sandbox_idempotency_key,
      processing_fee: p?.fee ?? 0,
      processor_payment_intent: p?.paymentIntent ?? null,
      processor_charge: p?.charge ?? null,
    });
  };
  locked: CheckoutStore["locked"] = (t, id, fn) =>
    transaction(this, async () =>
      fn(await this.find(t, id), {
        markCompleting: (now, intent) => this.markCompleting(t, id, now, intent),
        fail: async (failure, event) => {
          const failed = this.update(id, { status: "failed", ...failure });
          this.events.push(event(failed));
          return failed;
        },
      }),
    );
  settleCompleted: CheckoutStore["settleCompleted"] = async (id, fields, event) => {
    if (this.rows.get(id)?.status !== "completing") return undefined;
    this.events.push(event);
    return this.update(id, { status: "completed", ...fields });
  };
  failCompleting: CheckoutStore["failCompleting"] = async (id, failure, event) => {
    if (this.rows.get(id)?.status !== "completing") return;
    this.events.push(event(this.update(id, { status: "failed", ...failure })));
  };
  stuckCompleting = async (graceMs: number, limit: number) =>
    [...this.rows.values()]
      .filter((r) => r.status === "completing" && olderThan(r.updated_at, graceMs))
      .slice(0, limit)
      .map((r) => ({ ...r }));
}

export class FakeDisputes implements DisputeStore {
  readonly rows = new Map<string, DisputeRow>();
  readonly events: NewEvent[] = [];

  private set(id: string, fields: Partial<DisputeRow>): DisputeRow {
    const row = this.rows.get(id);
    if (row === undefined) throw new Error(`no dispute ${id}`);
    const next = { ...row, ...fields, updated_at: new Date() };
    this.rows.set(id, next);
    return { ...next };
  }

  find = async (id: string) => copy(this.rows.get(id));
  findByProcessorId = async (pid: string) => copy([...this.rows.values()].find((d) => d.processor_dispute_id === pid));
  insertOrFind: DisputeStore["insertOrFind"] = async (d) => {
    const known = await this.findByProcessorId(d.processor_dispute_id);
    if (known !== undefined) return known;
    const now = new Date();
    const row: DisputeRow = {
      ...d,
      currency: "USD",
      status: "opening",
      hold_id: null,
      hold_transaction_id: null,
      outcome: null,
      refund_amount: null,
      refund_transaction_id: null,
      fee: 0,
      fee_transaction_id: null,
      release_transaction_id: null,
      created_at: now,
      updated_at: now,
      closed_at: null,
    };
    this.rows.set(row.id, row);
    return { ...row };
  };
  updateStep: DisputeStore["updateStep"] = async (id, inStatus, fields) => (this.rows.get(id)?.status === inStatus ? this.set(id, fields) : undefined);
  markClosing: DisputeStore["markClosing"] = async (id, f) => (this.rows.get(id)?.status === "open" ? this.set(id, { status: "closing", ...f }) : undefined);
  settle: DisputeStore["settle"] = async (id, from, to, event) => {
    if (this.rows.get(id)?.status !== from) return undefined;
    this.events.push(event);
    return this.set(id, { status: to, ...(to === "won" || to === "lost" ? { closed_at: new Date() } : {}) });
  };
  inFlight = async (graceMs: number, limit: number) =>
    [...this.rows.values()].filter((d) => (d.status === "opening" || d.status === "closing") && olderThan(d.updated_at, graceMs)).slice(0, limit);
}

export class FakeTopups implements TopupStore {
  readonly rows = new Map<string, TopupRow>();

  private set(id: string, fields: Partial<TopupRow>): TopupRow {
    const row = this.rows.get(id);
    if (row === undefined) throw new Error(`no top-up ${id}`);
    const next = { ...row, ...fields, updated_at: new Date() };
    this.rows.set(id, next);
    return { ...next };
  }

  insertOrFind: TopupStore["insertOrFind"] = async (t) => {
    const known = [...this.rows.values()].find((r) => r.wallet_session_id === t.wallet_session_id && r.nonce === t.nonce);
    if (known !== undefined) return { ...known };
    const now = new Date();
    const row: TopupRow = {
      ...t,
      currency: "USD",
      status: "pending",
      processor_session_id: null,
      checkout_url: null,
      processing_fee: 0,
      processor_payment_intent: null,
      ledger_reference: null,
      transaction_id: null,
      failure_reason: null,
      created_at: now,
      updated_at: now,
      completed_at: null,
      processor_check_at: null,
    };
    this.rows.set(row.id, row);
    return { ...row };
  };
  setCheckout: TopupStore["setCheckout"] = async (id, sessionId, url, checkAt) => {
    if (this.rows.get(id)?.processor_session_id === null) this.set(id, { processor_session_id: sessionId, checkout_url: url, processor_check_at: checkAt });
  };
  find = async (id: string) => copy(this.rows.get(id));
  markCompleting: TopupStore["markCompleting"] = async (id, f) => {
    const row = this.rows.get(id);
    if (row?.status !== "pending") return undefined;
    return this.set(id, { status: "completing", ...f, processor_session_id: row.processor_session_id ?? f.processor_session_id });
  };
  settle: TopupStore["settle"] = async (id, txn) =>
    this.rows.get(id)?.status === "completing" ? this.set(id, { status: "completed", transaction_id: txn, completed_at: new Date() }) : undefined;
  fail: TopupStore["fail"] = async (id, from, reason) =>
    this.rows.get(id)?.status === from ? this.set(id, { status: "failed", failure_reason: reason }) : undefined;
  stuck = async (graceMs: number, limit: number) =>
    [...this.rows.values()].filter((r) => r.status === "completing" && olderThan(r.updated_at, graceMs)).slice(0, limit);
}

export class FakeSpends implements SpendStore {
  readonly spends: SpendRow[] = [];
  readonly reversals: (ReversalRow & { updated_at: Date })[] = [];

  snapshot(): () => void {
    const spends = this.spends.map((s) => ({ ...s }));
    const reversals = this.reversals.map((r) => ({ ...r }));
    return () => {
      this.spends.splice(0, this.spends.length, ...spends);
      this.reversals.splice(0, this.reversals.length, ...reversals);
    };
  }

  record: SpendStore["record"] = async (t, sp) => {
    if (this.spends.some((s) => ofTenant(s, t) && s.reference_id === sp.reference_id)) return;
    this.spends.push({
      org_id: t.orgId,
      livemode: t.livemode,
      reference_id: sp.reference_id,
      transaction_id: sp.transaction_id,
      consumer_sub: sp.consumer_sub,
      consumer_wallet_id: sp.consumer_wallet_id,
      creator_id: sp.creator_id,
      amount: sp.amount,
      sales_tax: sp.sales_tax,
      creator_amount: sp.creator_amount,
      platform_amount: sp.platform_amount,
      creator_bps: sp.creator_bps,
      status: "settled",
      created_at: new Date(),
    });
  };
  findByTransaction = async (t: Tenant, txn: string) => copy(this.spends.find((s) => ofTenant(s, t) && s.transaction_id === txn));
  findReversal = async (t: Tenant, txn: string) => copy(this.reversals.find((r) => ofTenant(r, t) && r.sale_transaction_id === txn));
  recordReversalIntent: SpendStore["recordReversalIntent"] = (t, r) =>
    transaction(this, async () => {
      const spend = this.spends.find((s) => ofTenant(s, t) && s.transaction_id === r.saleTransactionId);
      if (spend === undefined) throw new Error("spend vanished");
      const again = await this.findReversal(t, r.saleTransactionId);
      if (again !== undefined) return again;
      spend.status = "reversing";
      const row = {
        org_id: t.orgId,
        livemode: t.livemode,
        sale_transaction_id: r.saleTransactionId,
        spend_reference_id: r.spendReferenceId,
        reason: r.reason,
        reversal_transaction_id: null,
        status: "reversing" as const,
        response: null,
        updated_at: new Date(),
      };
      this.reversals.push(row);
      return { ...row };
    });
  settleReversal: SpendStore["settleReversal"] = async (t, saleTxn, reversalTxn, response) => {
    const rev = this.reversals.find((r) => ofTenant(r, t) && r.sale_transaction_id === saleTxn && r.status === "reversing");
    if (rev === undefined) return;
    Object.assign(rev, { status: "reversed", reversal_transaction_id: reversalTxn, response, updated_at: new Date() });
    const spend = this.spends.find((s) => ofTenant(s, t) && s.transaction_id === saleTxn);
    if (spend !== undefined) spend.status = "reversed";
  };
  stuckReversals = async (graceMs: number, limit: number) =>
    this.reversals
      .filter((r) => r.status === "reversing" && olderThan(r.updated_at, graceMs))
      .slice(0, limit)
      .map((r) => ({ ...r }));
}

const unused = (what: string) => () => Promise.reject(new Error(`${what} is not faked`));

export class FakeWalletSessions implements WalletSessionStore {
  readonly rows = new Map<string, WalletSessionRow>();
  insert = unused("walletSessions.insert");
  findByKey = unused("walletSessions.findByKey");
  findForPage = async (id: string) => copy(this.rows.get(id));
  storeResponse = unused("walletSessions.storeResponse");
}

export const fakeProcessorEvents = (): ProcessorEventStore => ({
  insert: unused("processorEvents.insert"),
  claimDue: async (): Promise<ProcessorEventRow[]> => [],
  markProcessed: unused("processorEvents.markProcessed"),
  markRetry: unused("processorEvents.markRetry"),
  deleteFinished: async () => 0,
});

export const fakeProcessorRefunds = (): ProcessorRefundStore => ({
  find: async (): Promise<ProcessorRefundRow | undefined> => undefined,
  findByProcessorRefundId: async () => undefined,
  unsettledOfPayment: async () => [],
  insertOrFind: unused("processorRefunds.insertOrFind"),
  recordState: unused("processorRefunds.recordState"),
  markNotified: unused("processorRefunds.markNotified"),
});

/** A provider whose hosted page is ours (the sandbox simulator's shape). */
export const fakeProvider = (name: "soledgic" | "stripe"): CheckoutProvider => ({
  name,
  assertConfigured: () => {},
  createHostedSession: async (input) => ({ checkoutUrl: input.hostedUrl, paymentId: name === "stripe" ? `cs_${input.sessionId}` : null }),
});

export interface Fakes {
  deps: PaymentsDeps;
  ledger: FakeLedger;
  checkouts: FakeCheckouts;
  disputes: FakeDisputes;
  topups: FakeTopups;
  spends: FakeSpends;
  /** The crash points passed, in order with the ledger's posts (`post:<kind>`). */
  steps: string[];
}

export function fakes(over: Partial<PaymentsDeps> = {}): Fakes {
  const ledger = new FakeLedger();
  const checkouts = new FakeCheckouts();
  const disputes = new FakeDisputes();
  const topups = new FakeTopups();
  const spends = new FakeSpends();
  const steps: string[] = [];
  const post = ledger.post.bind(ledger);
  ledger.post = async (req) => {
    steps.push(`post:${req.kind}`);
    return post(req);
  };
  const deps: PaymentsDeps = {
    checkouts,
    disputes,
    topups,
    spends,
    walletSessions: new FakeWalletSessions(),
    processorEvents: fakeProcessorEvents(),
    processorRefunds: fakeProcessorRefunds(),
    processorChecks: { claimDue: async () => [] },
    ledger,
    risk: { check: async () => ({ decision: "allow", evaluationId: "feval_fake", failedOpen: false }) },
    providers: { soledgic: fakeProvider("soledgic"), stripe: fakeProvider("stripe") },
    refunds: { createRefundRequest: unused("refunds.createRefundRequest"), processorRefundSettled: unused("refunds.processorRefundSettled") },
    processor: undefined,
    wakeProcessorWorker: () => {},
    beforeProcessorWork: async () => {},
    log: pino({ level: "silent" }),
    now: () => new Date(),
    afterLedgerPost: async () => void steps.push("afterLedgerPost"),
    processorCheckAfterMs: 600_000,
    ...over,
  };
  return { deps, ledger, checkouts, disputes, topups, spends, steps };
}

export { FakeLedger };

export const TENANT: Tenant = { orgId: "org_unit", livemode: false };
