/**
 * In-memory fakes behind the use cases' ports (ports.ts), for the unit tests only: the store keeps rows in maps
 * with the same conflict and state rules as the SQL (a transaction that throws leaves nothing behind), the
 * ledger answers what a test tells it, and every call is recorded.
 */
import { DomainError, type PostRequestInput, type schemas, type Tenant } from "@treasury/contracts";
import { LedgerOutcomeUnknown } from "@treasury/service-kit";
import { pino } from "pino";
import type { NewRefund, NewRefundRequest, ProcessorState, RefundRequestRow, RefundRow } from "../domain/records.ts";
import type { ShortfallPolicy } from "../domain/refund.ts";
import { expiryFields, isDue } from "../domain/refund-request.ts";
import type { RefundsDeps } from "./deps.ts";
import type { ClockReading, RefundPosted, RefundsLedger, RefundsPayments, RefundsStore, RefundsTx, RefundSettlement, SettledRefund } from "./ports.ts";

export interface RecordedEvent {
  type: string;
  org_id: string;
  livemode: boolean;
  data: Record<string, unknown>;
}

const sameTenant = (row: { org_id: string; livemode: boolean }, t: Tenant): boolean => row.org_id === t.orgId && row.livemode === t.livemode;

function refundRow(tenant: Tenant, r: NewRefund, shortfall: ShortfallPolicy): RefundRow {
  return {
    ...r,
    org_id: tenant.orgId,
    livemode: tenant.livemode,
    shortfall,
    status: "pending",
    transaction_id: null,
    sale_transaction_id: null,
    participant_id: null,
    refunded_amount: 0,
    from_creator: 0,
    from_platform: 0,
    sales_tax: 0,
    hold_amount_used: 0,
    creator_receivable_amount: 0,
    remaining_amount: null,
    sale_gross: null,
    is_full_refund: false,
    failure_code: null,
    failure_reason: null,
    updated_at: r.created_at,
    completed_at: null,
    processor_status: null,
    processor_refund_id: null,
    processor_failure_reason: null,
    reversal_transaction_id: null,
  };
}

function requestRow(tenant: Tenant, r: NewRefundRequest): RefundRequestRow {
  return {
    ...r,
    org_id: tenant.orgId,
    livemode: tenant.livemode,
    status: "created",
    refund_id: null,
    refund_transaction_id: null,
    rejection_reason: null,
    failure_reason: null,
    cancellation_reason: null,
    cancelled_by: null,
    reviewed_by_actor: null,
    review_metadata: {},
    updated_at: r.created_at,
    reviewed_at: null,
    completed_at: null,
    cancelled_at: null,
  };
}

export class FakeRefundsStore implements RefundsStore {
  refunds = new Map<string, RefundRow>();
  requests = new Map<string, RefundRequestRow>();
  events: RecordedEvent[] = [];
  shortfall: ShortfallPolicy = "receivable";

  private readonly tx: RefundsTx = {
    findRefund: (tenant, id) => this.findRefund(tenant, id),
    insertRefund: (tenant, refund) => this.insertRefund(tenant, refund),
    markFailed: async (id, code, reason, at) =>
      this.update(this.refunds, id, "pending", { status: "failed", failure_code: code, failure_reason: reason, updated_at: at }),
    findRefundRequest: (tenant, id) => this.findRefundRequest(tenant, id),
    insertRefundRequest: async (tenant, r) => {
      const taken = [...this.requests.values()].some((x) => sameTenant(x, tenant) && r.idempotency_key !== null && x.idempotency_key === r.idempotency_key);
      if (taken) return undefined;
      const row = requestRow(tenant, r);
      this.requests.set(row.id, row);
      return row;
    },
    moveRefundRequest: async (id, from, fields, at) => this.update(this.requests, id, from, { ...fields, updated_at: at }),
    expireDueRequests: async (now, limit) => this.expireDue(now, limit),
    emit: async (e) => void this.events.push({ type: e.type, org_id: e.org_id, livemode: e.livemode, data: e.data }),
    emitMany: async (es) => void this.events.push(...es.map((e) => ({ type: e.type, org_id: e.org_id, livemode: e.livemode, data: e.data }))),
  };

  async transaction<T>(fn: (tx: RefundsTx) => Promise<T>): Promise<T> {
    const saved = { refunds: new Map(this.refunds), requests: new Map(this.requests), events: [...this.events] };
    try {
      return await fn(this.tx);
    } catch (e) {
      Object.assign(this, saved);
      throw e;
    }
  }

  async insertRefund(tenant: Tenant, r: NewRefund): Promise<RefundRow | undefined> {
    const taken = [...this.refunds.values()].some(
      (x) =>
        sameTenant(x, tenant) &&
        (x.request_key === r.request_key ||
          x.ledger_reference === r.ledger_reference ||
          (r.external_refund_id !== null && x.external_refund_id === r.external_refund_id)),
    );
    if (taken) return undefined;
    const row = refundRow(tenant, r, this.shortfall);
    this.refunds.set(row.id, row);
    return row;
  }

  async settleCompleted(s: RefundSettlement): Promise<SettledRefund | undefined> {
    const row = this.update(this.refunds, s.id, "pending", { ...s.outcome, status: "completed", updated_at: s.outcome.completed_at });
    if (row === undefined) return undefined;
    for (const e of s.events) this.events.push({ type: e.type, org_id: e.org_id, livemode: e.livemode, data: e.payload.data });
    const at = s.outcome.completed_at;
    const fields = { status: "completed" as const, refund_transaction_id: s.outcome.transaction_id, completed_at: at, updated_at: at };
    const moved = s.requestId === null ? undefined : this.update(this.requests, s.requestId, "processing", fields);
    return { row, requestMoved: moved !== undefined };
  }

  async findRefund(tenant: Tenant, id: string): Promise<RefundRow | undefined> {
    const row = this.refunds.get(id);
    return row !== undefined && sameTenant(row, tenant) ? row : undefined;
  }

  async findRefundForRequest(tenant: Tenant, key: string, externalRefundId: string | undefined): Promise<RefundRow | undefined> {
    const mine = [...this.refunds.values()].filter((x) => sameTenant(x, tenant));
    return mine.find((x) => x.request_key === key) ?? mine.find((x) => externalRefundId !== undefined && x.external_refund_id === externalRefundId);
  }

  async listRefunds(tenant: Tenant, f: { saleReference: string | undefined; limit: number; offset: number }): Promise<{ rows: RefundRow[]; total: number }> {
    const all = [...this.refunds.values()]
      .filter((x) => sameTenant(x, tenant) && (f.saleReference === undefined || x.sale_reference === f.saleReference))
      .reverse();
    return { rows: all.slice(f.offset, f.offset + f.limit), total: all.length };
  }

  async recordProcessorStatus(id: string, p: ProcessorState): Promise<RefundRow | undefined> {
    const row = this.refunds.get(id);
    if (
      row === undefined ||
      row.status !== "pending" ||
      (row.processor_status !== null && row.processor_status !== "pending") ||
      row.processor_status === p.status
    )
      return undefined;
    const next = {
      ...row,
      processor_status: p.status,
      processor_refund_id: p.processor_refund_id ?? row.processor_refund_id,
      processor_failure_reason: p.failure_reason,
    };
    this.refunds.set(id, next);
    return next;
  }

  async recordReversal(id: string, transactionId: string): Promise<void> {
    this.update(this.refunds, id, "pending", { reversal_transaction_id: transactionId });
  }

  async stuckPending(_graceMs: number, limit: number): Promise<RefundRow[]> {
    return [...this.refunds.values()].filter((x) => x.status === "pending" && x.processor_status !== "pending").slice(0, limit);
  }

  async findRefundRequest(tenant: Tenant, id: string): Promise<RefundRequestRow | undefined> {
    const row = this.requests.get(id);
    return row !== undefined && sameTenant(row, tenant) ? row : undefined;
  }

  async findRefundRequestByKey(tenant: Tenant, key: string): Promise<RefundRequestRow | undefined> {
    return [...this.requests.values()].find((x) => sameTenant(x, tenant) && x.idempotency_key === key);
  }

  async listRefundRequests(
    tenant: Tenant,
    f: { status: RefundRequestRow["status"] | undefined; saleReference: string | undefined; limit: number; offset: number },
  ) {
    const all = [...this.requests.values()]
      .filter(
        (x) =>
          sameTenant(x, tenant) && (f.status === undefined || x.status === f.status) && (f.saleReference === undefined || x.sale_reference === f.saleReference),
      )
      .reverse();
    return { rows: all.slice(f.offset, f.offset + f.limit), total: all.length };
  }

  /** What the SQL does: created requests due on their own clock, earliest first, cancelled by the schedule at that clock's now. */
  private expireDue(now: ClockReading, limit: number): RefundRequestRow[] {
    const at = (r: RefundRequestRow): Date => new Date(now.realNow.getTime() + (r.livemode ? 0 : (now.advanced.get(r.org_id) ?? 0)) * 1000);
    const due = [...this.requests.values()]
      .filter((r) => isDue(r, at(r)))
      .sort((a, b) => a.expires_at.getTime() - b.expires_at.getTime() || (a.id < b.id ? -1 : 1))
      .slice(0, limit);
    return due.flatMap((r) => this.update(this.requests, r.id, "created", { ...expiryFields(at(r)), updated_at: at(r) }) ?? []);
  }

  eventTypes(): string[] {
    return this.events.map((e) => e.type);
  }

  /** Moves a row that is in state `from`; undefined (nothing changed) when it is not. */
  private update<R extends { status: string }>(rows: Map<string, R>, id: string, from: string, fields: Partial<R>): R | undefined {
    const row = rows.get(id);
    if (row === undefined || row.status !== from) return undefined;
    const next = { ...row, ...fields };
    rows.set(id, next);
    return next;
  }
}

/** What the fake ledger does with the next refund posts: answer, refuse with a code, or not answer at all. */
export type LedgerBehaviour = { kind: "post" } | { kind: "refuse"; code: DomainError["code"]; message?: string } | { kind: "silent" };

/** A ledger that refunds the whole remainder of one sale of `gross`, once per reference (a repeat answers the first). */
export class FakeLedger implements RefundsLedger {
  behaviour: LedgerBehaviour = { kind: "post" };
  posts: PostRequestInput[] = [];
  sale: schemas.SaleSummary = { sale_reference: "sale_1", gross: 10_000, refunded_amount: 0, remaining_amount: 10_000, reversed: false };
  private readonly answered = new Map<string, RefundPosted>();

  async postRefund(req: PostRequestInput): Promise<RefundPosted> {
    this.posts.push(req);
    if (this.behaviour.kind === "silent") throw new LedgerOutcomeUnknown("service_timeout");
    if (this.behaviour.kind === "refuse") throw new DomainError(this.behaviour.code, this.behaviour.message ?? "refused by the ledger");
    const first = this.answered.get(req.reference_id);
    if (first !== undefined) return { ...first, duplicate: true };
    const amount = req.refund?.amount ?? this.sale.remaining_amount;
    this.sale = { ...this.sale, refunded_amount: this.sale.refunded_amount + amount, remaining_amount: this.sale.remaining_amount - amount };
    const posted: RefundPosted = {
      transaction_id: `txn_${this.answered.size + 1}`,
      amount,
      duplicate: false,
      extra: {
        refund: {
          sale_reference: req.refund?.sale_reference ?? "",
          sale_transaction_id: "txn_sale",
          participant_id: "creator_1",
          amount,
          from_creator: Math.round(amount * 0.8),
          from_platform: amount - Math.round(amount * 0.8),
          sales_tax: 0,
          remaining_amount: this.sale.remaining_amount,
          is_full_refund: this.sale.remaining_amount === 0,
          sale_gross: this.sale.gross,
        },
        hold_amount_used: 0,
        creator_receivable_amount: 0,
      },
    };
    this.answered.set(req.reference_id, posted);
    return posted;
  }

  async saleSummary(): Promise<schemas.SaleSummary> {
    return this.sale;
  }

  async reverseTransaction(): Promise<string> {
    return "txn_reversal";
  }
}

/** Payments for sandbox refunds: never asked; a test that reaches it fails. */
export const unusedPayments: RefundsPayments = {
  processorRefund: () => Promise.reject(new Error("payments asked for a sandbox refund")),
};

/** Sandbox clocks a test moves: seconds ahead of real time by org (live never moves). */
export class FakeClocks {
  readonly advanced = new Map<string, number>();

  constructor(private readonly realNow: () => Date) {}

  now(tenant: Tenant): Date {
    return new Date(this.realNow().getTime() + (tenant.livemode ? 0 : (this.advanced.get(tenant.orgId) ?? 0)) * 1000);
  }

  advance(orgId: string, seconds: number): void {
    this.advanced.set(orgId, (this.advanced.get(orgId) ?? 0) + seconds);
  }

  reading(): ClockReading {
    return { realNow: this.realNow(), advanced: new Map(this.advanced) };
  }
}

export type FakeDeps = RefundsDeps & { store: FakeRefundsStore; ledger: FakeLedger; clocks: FakeClocks };

/** Use-case deps over fresh fakes, with a real clock that moves one second per reading and a 30-day time to live. */
export function fakeDeps(): FakeDeps {
  let tick = Date.parse("2026-01-01T00:00:00Z");
  const now = (): Date => new Date((tick += 1000));
  const clocks = new FakeClocks(now);
  return {
    store: new FakeRefundsStore(),
    ledger: new FakeLedger(),
    payments: unusedPayments,
    risk: { check: async () => ({ decision: "allow", evaluationId: "feval_fake", failedOpen: false }) },
    log: pino({ level: "silent" }),
    now,
    clock: (tenant) => clocks.now(tenant),
    clocks,
    requestTtlDays: 30,
    afterIntent: async () => {},
    afterLedgerPost: async () => {},
  };
}
