/**
 * Every port the use cases of payments need: its own records (implemented over PostgreSQL in store/), the ledger
 * and the refunds service (over NATS in adapters/), the checkout providers and the card processor (adapters/).
 * The use cases see only these; the clock and the crash points are in usecases/deps.ts.
 */
import type { PostRequestInput, Tenant } from "@treasury/contracts";
import type { LedgerPosted, NewEvent } from "@treasury/service-kit";
import type {
  CheckoutRow,
  CompletionIntent,
  DisputeRow,
  DisputeStatus,
  DisputeStepFields,
  DueCheck,
  NewCheckout,
  NewDispute,
  NewProcessorEvent,
  NewProcessorRefund,
  NewReversal,
  NewSpend,
  NewTopup,
  NewWalletSession,
  ProcessorEventRow,
  ProcessorRefundRow,
  ProcessorRefundState,
  ReversalRow,
  SpendRow,
  TopupRow,
  TopupStatus,
  WalletSessionRow,
} from "../domain/records.ts";
import type { ProcessorRefundStatus } from "../domain/processor-refund.ts";

// ── Records ────────────────────────────────────────────────────────────────────────────────────────────────────

/** Why a failed session failed. */
export interface CheckoutFailure {
  failure_code: string;
  failure_reason: string;
}

/** What a use case may do with a session it holds locked (CheckoutStore.locked); it commits with the lock. */
export interface LockedCheckout {
  /** pending → completing (see CheckoutStore.markCompleting). */
  markCompleting(now: Date, intent: CompletionIntent): Promise<CheckoutRow | undefined>;
  /** Fails the session and writes the event `event` builds from the failed row. */
  fail(failure: CheckoutFailure, event: (failed: CheckoutRow) => NewEvent): Promise<CheckoutRow | undefined>;
}

export interface CheckoutStore {
  /** Inserts a session; undefined when the idempotency key is taken (the caller replays the existing one). */
  insert(c: NewCheckout): Promise<CheckoutRow | undefined>;
  find(tenant: Tenant, id: string): Promise<CheckoutRow | undefined>;
  /** Hosted pages and processor events: the unguessable id alone names the row; the row names its tenant. */
  findForPage(id: string): Promise<CheckoutRow | undefined>;
  findByKey(tenant: Tenant, key: string): Promise<CheckoutRow | undefined>;
  /** The live sale a processor's payment (or its charge) paid for. */
  findByPayment(paymentIntent: string | null, charge: string | null): Promise<CheckoutRow | undefined>;
  storeCreateResponse(id: string, response: Record<string, unknown>): Promise<void>;
  /**
   * pending → completing on its own: only a pending, unexpired session of the tenant moves (a payment the processor
   * took completes even past our expiry). Undefined when it did not move.
   */
  markCompleting(tenant: Tenant, id: string, now: Date, intent: CompletionIntent): Promise<CheckoutRow | undefined>;
  /** Runs `fn` with the session locked (undefined: no such session); what it does through `tx` commits together. */
  locked<T>(tenant: Tenant, id: string, fn: (row: CheckoutRow | undefined, tx: LockedCheckout) => Promise<T>): Promise<T>;
  /** completing → completed with its event, at once; undefined when it was not `completing` (another settler won). */
  settleCompleted(
    id: string,
    fields: { sale_transaction_id: string; hold_id: string | null; completed_at: Date },
    event: NewEvent,
  ): Promise<CheckoutRow | undefined>;
  /** completing → failed with the event `event` builds from the failed row; nothing when it was not `completing`. */
  failCompleting(id: string, failure: CheckoutFailure, event: (failed: CheckoutRow) => NewEvent): Promise<void>;
  /** Sessions in `completing` for longer than the grace period, oldest first. */
  stuckCompleting(graceMs: number, limit: number): Promise<CheckoutRow[]>;
}

export interface DisputeStore {
  find(id: string): Promise<DisputeRow | undefined>;
  findByProcessorId(processorDisputeId: string): Promise<DisputeRow | undefined>;
  /** Records a dispute as `opening` with its hold plan, or finds the one recorded before for the processor's id. */
  insertOrFind(d: NewDispute): Promise<DisputeRow>;
  /** Records a step's result while the dispute is in `inStatus`; undefined when it had moved on. */
  updateStep(id: string, inStatus: DisputeStatus, fields: DisputeStepFields): Promise<DisputeRow | undefined>;
  /** open → closing with the processor's outcome and what losing costs. */
  markClosing(id: string, f: { outcome: "won" | "lost"; refund_amount: number; fee: number }): Promise<DisputeRow | undefined>;
  /** A state move and its event at once; undefined when the dispute was not in `from` (the first settler wins). */
  settle(id: string, from: DisputeStatus, to: DisputeStatus, event: NewEvent): Promise<DisputeRow | undefined>;
  /** Disputes left `opening` or `closing` for longer than the grace period. */
  inFlight(graceMs: number, limit: number): Promise<DisputeRow[]>;
}

export interface TopupStore {
  /** The top-up of one form render: inserted, or the one an earlier submit of the same form made. */
  insertOrFind(t: NewTopup): Promise<TopupRow>;
  /** The processor's session of a top-up, and when to ask the processor about it if its events are late. */
  setCheckout(id: string, processorSessionId: string, checkoutUrl: string, checkAt: Date): Promise<void>;
  find(id: string): Promise<TopupRow | undefined>;
  /** pending → completing with the processor's facts and the ledger reference; undefined when it was not pending. */
  markCompleting(
    id: string,
    f: { ledger_reference: string; processor_session_id: string; processing_fee: number; processor_payment_intent: string | null },
  ): Promise<TopupRow | undefined>;
  /** completing → completed; undefined when it was not completing. */
  settle(id: string, transactionId: string): Promise<TopupRow | undefined>;
  fail(id: string, from: TopupStatus, reason: string): Promise<TopupRow | undefined>;
  stuck(graceMs: number, limit: number): Promise<TopupRow[]>;
}

export interface WalletSessionStore {
  /** Undefined when the idempotency key is taken. */
  insert(w: NewWalletSession): Promise<WalletSessionRow | undefined>;
  findByKey(tenant: Tenant, key: string): Promise<WalletSessionRow | undefined>;
  /** Hosted page: the unguessable session id alone authorises. */
  findForPage(id: string): Promise<WalletSessionRow | undefined>;
  storeResponse(id: string, response: Record<string, unknown>): Promise<void>;
}

export interface SpendStore {
  /** Records a spend the ledger posted (a replay records nothing new). */
  record(tenant: Tenant, spend: NewSpend): Promise<void>;
  findByTransaction(tenant: Tenant, transactionId: string): Promise<SpendRow | undefined>;
  findReversal(tenant: Tenant, saleTransactionId: string): Promise<ReversalRow | undefined>;
  /**
   * The reversal's intent, under the spend's lock: the spend becomes `reversing` and the reversal is recorded; a
   * reversal recorded meanwhile is answered instead.
   */
  recordReversalIntent(tenant: Tenant, reversal: NewReversal): Promise<ReversalRow>;
  /** reversing → reversed with the reversal's answer, and the spend with it; nothing when it was settled before. */
  settleReversal(tenant: Tenant, saleTransactionId: string, reversalTransactionId: string, response: Record<string, unknown>): Promise<void>;
  /** Reversals left `reversing` for longer than the grace period. */
  stuckReversals(graceMs: number, limit: number): Promise<ReversalRow[]>;
}

export interface ProcessorEventStore {
  /** Records an event; false when the processor's id was recorded before (a redelivery). */
  insert(e: NewProcessorEvent): Promise<boolean>;
  /** Claims up to `limit` due events for `leaseMs` (each claim commits at once). */
  claimDue(leaseMs: number, limit: number): Promise<ProcessorEventRow[]>;
  markProcessed(e: { provider: string; event_id: string }, outcome: string): Promise<void>;
  /** The attempt failed: retried after `delayMs` (the lease is given back). */
  markRetry(e: { provider: string; event_id: string }, error: string, delayMs: number): Promise<void>;
  /** Deletes up to `limit` finished events processed before `before`; answers how many. */
  deleteFinished(before: Date, limit: number): Promise<number>;
}

/** Names one processor refund: its tenant and the refunds service's refund id. */
export interface ProcessorRefundKey {
  org_id: string;
  livemode: boolean;
  refund_id: string;
}

export interface ProcessorRefundStore {
  find(tenant: Tenant, refundId: string): Promise<ProcessorRefundRow | undefined>;
  findByProcessorRefundId(processorRefundId: string): Promise<ProcessorRefundRow | undefined>;
  /** Refunds of one payment the processor has accepted and not yet settled. */
  unsettledOfPayment(paymentIntent: string): Promise<ProcessorRefundRow[]>;
  /** Records the intent to refund at the processor (or finds the one recorded before). */
  insertOrFind(r: NewProcessorRefund): Promise<ProcessorRefundRow>;
  /** Records what the processor says; a settled refund stays settled. Undefined when nothing changed. */
  recordState(key: ProcessorRefundKey, state: ProcessorRefundState): Promise<ProcessorRefundRow | undefined>;
  markNotified(key: ProcessorRefundKey, status: string): Promise<void>;
}

export interface ProcessorCheckStore {
  /** Claims the due processor sessions, moving each one's next check in the same statement. */
  claimDue(opts: { afterMs: number; topupTtlMs: number; limit: number }): Promise<DueCheck[]>;
}

// ── The ledger ─────────────────────────────────────────────────────────────────────────────────────────────────

export interface LedgerWallet {
  id: string;
  wallet_type: "consumer_credit" | "creator_earnings";
  owner_id: string;
  owner_type: string | null;
  participant_id: string | null;
  status: string;
  balance: number;
  held_amount: number;
  available_balance: number;
  topup_supported: boolean;
  [k: string]: unknown;
}

export interface LedgerParticipant {
  id: string;
  display_name: string | null;
  default_split_percent: number | null;
  wallet_id: string;
  [k: string]: unknown;
}

/** A participant's facts that never change once it exists. */
export type ParticipantInfo = Pick<LedgerParticipant, "id" | "wallet_id" | "display_name" | "default_split_percent">;

/**
 * The ledger as payments uses it. A refusal is the ledger's DomainError; no answer is the kit's
 * LedgerOutcomeUnknown for what moves money (post, topUp) and service_unavailable for a read.
 */
export interface LedgerClient {
  post(req: PostRequestInput): Promise<LedgerPosted>;
  getParticipant(tenant: Tenant, participantId: string): Promise<LedgerParticipant>;
  /** The participant's immutable facts, cached briefly (a participant is never changed or deleted once created). */
  participantInfo(tenant: Tenant, participantId: string): Promise<ParticipantInfo>;
  findWallet(tenant: Tenant, ownerId: string, walletType: "consumer_credit" | "creator_earnings"): Promise<LedgerWallet | undefined>;
  getWallet(tenant: Tenant, walletId: string): Promise<LedgerWallet>;
  upsertConsumerWallet(tenant: Tenant, ownerId: string, ownerType: string, name: string): Promise<LedgerWallet>;
  listEntries(tenant: Tenant, walletId: string, limit: number): Promise<Record<string, unknown>[]>;
  topUp(tenant: Tenant, walletId: string, amount: number, referenceId: string, description: string): Promise<Record<string, unknown>>;
}

// ── The refunds service ────────────────────────────────────────────────────────────────────────────────────────

export interface RefundRequestInput {
  sale_reference: string;
  customer_id?: string;
  customer_email?: string;
  amount?: number;
  reason?: string;
  idempotency_key: string;
  metadata: Record<string, unknown>;
}

export interface RefundsClient {
  /** Answers the created (or, for a repeated idempotency_key, the existing) refund request. */
  createRefundRequest(tenant: Tenant, body: RefundRequestInput): Promise<Record<string, unknown>>;
  /** Tells the refunds service the processor settled a card refund; resolves once it has acted on it. */
  processorRefundSettled(
    tenant: Tenant,
    body: { refund_id: string; processor_refund_id: string; status: "succeeded" | "failed"; failure_reason: string | null },
  ): Promise<void>;
}

// ── Checkout providers ─────────────────────────────────────────────────────────────────────────────────────────

export type ProviderName = "soledgic" | "stripe";

export interface HostedSessionInput {
  sessionId: string;
  amount: number;
  currency: string;
  productName: string;
  successUrl: string;
  cancelUrl: string;
  hostedUrl: string;
  livemode: boolean;
  expiresAt: Date;
  /** What the processor's events carry back, so they can be matched to our row. */
  metadata: Record<string, string>;
}

export interface CheckoutProvider {
  name: ProviderName;
  /**
   * Throws provider_not_configured when the provider cannot take payments of this environment (`livemode`) in
   * this deployment: checked before anything is stored or asked.
   */
  assertConfigured(livemode: boolean): void;
  /** Where the buyer pays, and the provider's payment id (null when the id comes at completion). */
  createHostedSession(input: HostedSessionInput): Promise<{ checkoutUrl: string; paymentId: string | null }>;
}

export type Providers = Record<ProviderName, CheckoutProvider>;

// ── The card processor ─────────────────────────────────────────────────────────────────────────────────────────

/** The processor said no for good: retrying the same request cannot succeed. */
export class ProcessorRefused extends Error {
  constructor(
    message: string,
    readonly processorCode: string | null,
  ) {
    super(message);
    this.name = "ProcessorRefused";
  }
}

/** No answer, an error on its side, our credentials refused: the outcome is unknown; the same request is sent again later. */
export class ProcessorUnavailable extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ProcessorUnavailable";
  }
}

export interface ProcessorCheckoutInput {
  /** Our id of what is paid (a checkout session, a wallet top-up): the client reference and the idempotency key. */
  reference: string;
  amount: number;
  currency: string;
  productName: string;
  successUrl: string;
  cancelUrl: string;
  expiresAt: Date;
  metadata: Record<string, string>;
}

export interface PaymentFacts {
  paymentIntentId: string;
  chargeId: string | null;
  /** The processor's fee of the payment, in cents (from the charge's balance transaction). */
  fee: number;
}

export interface ProcessorRefund {
  id: string;
  status: ProcessorRefundStatus;
  failureReason: string | null;
  paymentIntentId: string | null;
  metadata: Record<string, string>;
}

/** The card processor's API; errors are ProcessorRefused or ProcessorUnavailable. */
export interface ProcessorClient {
  createCheckoutSession(input: ProcessorCheckoutInput): Promise<{ id: string; url: string }>;
  /** The payment's charge and fee; ProcessorUnavailable while the processor has not settled its balance transaction. */
  paymentFacts(paymentIntentId: string): Promise<PaymentFacts>;
  /** Refunds `amount` of a payment; `refundId` (ours) is the idempotency key, so a repeat answers the same refund. */
  createRefund(input: { paymentIntentId: string; amount: number; refundId: string; metadata: Record<string, string> }): Promise<ProcessorRefund>;
  retrieveRefund(processorRefundId: string): Promise<ProcessorRefund>;
  /**
   * A checkout session as the processor records it now, in the shape its events carry (payment expanded to its
   * charge's balance transaction, so a paid one brings its fee).
   */
  retrieveCheckoutSession(processorSessionId: string): Promise<unknown>;
}
