/**
 * Every port the refunds use cases need: the service's own store (PostgreSQL: store/refunds-store.ts), the
 * ledger (adapters/ledger.ts), payments (adapters/payments.ts) and the clock. Use cases see only these; tests
 * put in-memory fakes behind them (usecases/fakes.ts).
 */
import type { PostRequestInput, schemas, Tenant } from "@treasury/contracts";
import type { NewEvent, OutboxRowValues } from "@treasury/service-kit";
import type { RefundRequestStatus } from "../domain/refund-request.ts";
import type { NewRefund, NewRefundRequest, ProcessorState, RefundOutcome, RefundRequestRow, RefundRow, RequestFields } from "../domain/records.ts";

/** A refund to settle: what the ledger did, the events it causes, and the approved request it completes. */
export interface RefundSettlement {
  id: string;
  outcome: RefundOutcome;
  /** Written in order, and only if the refund moved. */
  events: readonly OutboxRowValues[];
  /** The approved refund request the refund executes, moved with it. */
  requestId: string | null;
}

export interface SettledRefund {
  row: RefundRow;
  requestMoved: boolean;
}

export interface RefundPage {
  rows: RefundRow[];
  total: number;
}

export interface RefundRequestPage {
  rows: RefundRequestRow[];
  total: number;
}

/** Now for every tenant at once: real time (live) and how far each advanced sandbox runs ahead of it. */
export interface ClockReading {
  realNow: Date;
  /** Seconds ahead of real time, by org, of each sandbox whose clock was advanced. */
  advanced: ReadonlyMap<string, number>;
}

/** The statements a use case runs in ONE transaction (RefundsStore.transaction): all of them commit, or none. */
export interface RefundsTx {
  findRefund(tenant: Tenant, id: string): Promise<RefundRow | undefined>;
  /** A refund intent; undefined when its request key, external id or ledger reference is taken. */
  insertRefund(tenant: Tenant, refund: NewRefund): Promise<RefundRow | undefined>;
  /** pending → failed with the ledger's refusal; undefined when it was not pending. */
  markFailed(id: string, code: string, reason: string, at: Date): Promise<RefundRow | undefined>;
  /** With `forUpdate`, the row stays locked until the transaction ends (every move of a request takes this lock). */
  findRefundRequest(tenant: Tenant, id: string, forUpdate?: boolean): Promise<RefundRequestRow | undefined>;
  /** A `created` request; undefined when its idempotency key is taken. */
  insertRefundRequest(tenant: Tenant, request: NewRefundRequest): Promise<RefundRequestRow | undefined>;
  /** Moves a request from `from` with `fields`; undefined when it was not in `from` (another move won). */
  moveRefundRequest(id: string, from: RefundRequestStatus, fields: RequestFields, at: Date): Promise<RefundRequestRow | undefined>;
  /**
   * Cancels (expires) up to `limit` requests still `created` whose expires_at has passed on their own clock, in one
   * statement: each moves only if it is still `created` and not locked by a move in flight (that move decides it;
   * a later pass sees what it left). Answers the expired requests, earliest deadline first.
   */
  expireDueRequests(now: ClockReading, limit: number): Promise<RefundRequestRow[]>;
  /** Writes an event to the refunds outbox: it is published if and only if the transaction commits. */
  emit(event: NewEvent): Promise<void>;
  /** Writes many events to the refunds outbox in one statement, in order (published if and only if the transaction commits). */
  emitMany(events: readonly NewEvent[]): Promise<void>;
}

/** The refunds service's own state. Writes outside a transaction are coalesced: one statement per event-loop turn. */
export interface RefundsStore {
  transaction<T>(fn: (tx: RefundsTx) => Promise<T>): Promise<T>;
  /** Step 1 of a client's refund: its intent (`pending`, with the org's shortfall policy), or undefined when taken. */
  insertRefund(tenant: Tenant, refund: NewRefund): Promise<RefundRow | undefined>;
  /**
   * Step 3: pending → completed with its events, and its approved request processing → completed, in one
   * statement; undefined when it was not pending (another driver settled it first).
   */
  settleCompleted(settlement: RefundSettlement): Promise<SettledRefund | undefined>;
  findRefund(tenant: Tenant, id: string): Promise<RefundRow | undefined>;
  /** The refund a client request names: by its request key, else by its external_refund_id. */
  findRefundForRequest(tenant: Tenant, requestKey: string, externalRefundId: string | undefined): Promise<RefundRow | undefined>;
  listRefunds(tenant: Tenant, filter: { saleReference: string | undefined; limit: number; offset: number }): Promise<RefundPage>;
  /** Records where a pending refund stands at the processor; undefined when not pending or nothing changed. */
  recordProcessorStatus(id: string, state: ProcessorState): Promise<RefundRow | undefined>;
  recordReversal(id: string, transactionId: string): Promise<void>;
  /** Refunds pending for longer than `graceMs`, oldest first (not those the processor holds). */
  stuckPending(graceMs: number, limit: number): Promise<RefundRow[]>;
  findRefundRequest(tenant: Tenant, id: string): Promise<RefundRequestRow | undefined>;
  findRefundRequestByKey(tenant: Tenant, idempotencyKey: string): Promise<RefundRequestRow | undefined>;
  listRefundRequests(
    tenant: Tenant,
    filter: { status: RefundRequestStatus | undefined; saleReference: string | undefined; limit: number; offset: number },
  ): Promise<RefundRequestPage>;
}

/** What the ledger answers a refund post (PostResult with `extra.refund`), checked by the adapter before use. */
export interface RefundPosted {
  transaction_id: string;
  amount: number;
  duplicate: boolean;
  extra: {
    refund: {
      sale_reference: string;
      sale_transaction_id: string;
      participant_id: string | null;
      amount: number;
      from_creator: number;
      from_platform: number;
      sales_tax: number;
      remaining_amount: number;
      is_full_refund: boolean;
      sale_gross: number;
    };
    hold_amount_used: number;
    creator_receivable_amount: number;
  };
}

/**
 * The ledger. A refusal is the ledger's DomainError; no answer where money may move is the kit's
 * LedgerOutcomeUnknown (never "failed": the same request is sent again later).
 */
export interface RefundsLedger {
  /** `svc.ledger.post` with a refund request: at most once per reference, a repeat answers the first result. */
  postRefund(req: PostRequestInput): Promise<RefundPosted>;
  /** The sale as the ledger keeps it (original_sale_not_found when the org and environment have none). */
  saleSummary(tenant: Tenant, saleReference: string): Promise<schemas.SaleSummary>;
  /** Reverses a transaction in full under an idempotency key; a repeat answers the reversal made first. Its transaction id. */
  reverseTransaction(tenant: Tenant, req: { transaction_id: string; idempotency_key: string; reason: string }): Promise<string>;
}

/** Payments could not have the processor refund the card payment yet: the refund stays pending and is asked again. */
export class PaymentsOutcomeUnknown extends Error {
  constructor(readonly code: string) {
    super(`payments could not refund the card payment yet (${code}); asked again later`);
    this.name = "PaymentsOutcomeUnknown";
  }
}

/** Payments, for the card refund of a live sale at the processor (never asked for a sandbox refund). */
export interface RefundsPayments {
  /** The processor refund's state, or null when the sale was not paid by card through the processor. */
  processorRefund(tenant: Tenant, req: { refund_id: string; sale_reference: string; amount: number }): Promise<schemas.ProcessorRefundState | null>;
}
