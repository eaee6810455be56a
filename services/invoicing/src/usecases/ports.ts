/**
 * Everything the invoicing use cases need, declared beside them (store/ and adapters/ implement it; service.ts
 * wires it). Stores answer domain values; each write that changes an invoice does so in one transaction with the
 * ledger intent it needs and the events it causes.
 */
import type { PostRequestInput, schemas, Tenant } from "@treasury/contracts";
import type { LedgerPosted } from "@treasury/service-kit";
import type { Invoice, Payment, StoredStatus } from "../domain/invoice.ts";

/** An event to write with a change: its type and data (the invoice as shown, and the payment where there is one). */
export type InvoiceEventType = "invoice.created" | "invoice.sent" | "invoice.payment_recorded" | "invoice.paid" | "invoice.voided" | "invoice.overdue";

export interface PendingEvent {
  type: InvoiceEventType;
  data: Record<string, unknown>;
}

/** A ledger post recorded as an intent (step 1), driven after commit (steps 2 and 3). */
export interface Posting {
  id: string;
  org_id: string;
  livemode: boolean;
  invoice_id: string;
  action: "send" | "payment" | "void";
  payment_id: string | null;
  ledger_kind: string;
  ledger_reference: string;
  amount_cents: number;
  effective_date: string;
  /** The events the post's settlement writes (decided with the intent: whether this payment paid the invoice). */
  event_types: InvoiceEventType[];
  status: "pending" | "posted" | "failed";
  transaction_id: string | null;
}

export type NewPosting = Omit<Posting, "status" | "transaction_id">;

/** What create writes: the invoice's own fields; the store adds its number, status and timestamps. */
export type NewInvoice = Pick<
  Invoice,
  | "id"
  | "customer_name"
  | "customer_email"
  | "customer_id"
  | "customer_address"
  | "issue_date"
  | "due_date"
  | "notes"
  | "terms"
  | "reference_id"
  | "request_hash"
  | "metadata"
  | "hosted_url"
  | "lines"
> & { total_cents: number };

export interface InvoiceFilter {
  status?: schemas.InvoiceStatus | undefined;
  customer_id?: string | undefined;
  today: string;
  limit: number;
  offset: number;
}

/**
 * What a transition under the invoice's row lock decides: the invoice's new fields, the payment to insert, the
 * posting intent and the events, or a refusal (thrown).
 */
export interface Transition {
  status: StoredStatus;
  amount_paid_cents: number;
  stamp?: "sent_at" | "paid_at" | "voided_at" | undefined;
  payment?: (Omit<Payment, "transaction_id" | "created_at"> & { request_hash: string; metadata: Record<string, unknown> }) | undefined;
  posting?: NewPosting | undefined;
  /** Events written in the transition's own transaction (a draft voided: nothing to post). */
  events?: ((invoice: Invoice) => PendingEvent[]) | undefined;
}

export interface InvoiceStore {
  /** Takes the tenant's next number and inserts the invoice in one transaction; undefined when reference_id is taken. */
  create(tenant: Tenant, inv: NewInvoice, events: (invoice: Invoice) => PendingEvent[]): Promise<Invoice | undefined>;
  get(tenant: Tenant, id: string): Promise<Invoice | undefined>;
  /** By id alone, in whichever org and environment: only the hosted page, whose capability is the id, reads this way. */
  byId(id: string): Promise<Invoice | undefined>;
  many(tenant: Tenant, ids: readonly string[]): Promise<Invoice[]>;
  findByReference(tenant: Tenant, referenceId: string): Promise<Invoice | undefined>;
  findByNumber(tenant: Tenant, number: string): Promise<Invoice | undefined>;
  findBySendTransaction(tenant: Tenant, transactionId: string): Promise<Invoice | undefined>;
  list(tenant: Tenant, f: InvoiceFilter): Promise<{ invoices: Invoice[]; total: number }>;
  payments(tenant: Tenant, invoiceId: string): Promise<Payment[]>;
  findPayment(tenant: Tenant, referenceId: string): Promise<(Payment & { request_hash: string }) | undefined>;
  /**
   * Locks the invoice row, lets `decide` look at it, and applies what it decided in the same transaction:
   * concurrent payments of one invoice are serialised here, so they never pay past its total. Answers the invoice
   * after it and the posting intent recorded, or undefined when the invoice does not exist. `decide` throws to refuse.
   */
  transition(tenant: Tenant, id: string, decide: (locked: Invoice) => Transition): Promise<{ invoice: Invoice; posting: Posting | undefined } | undefined>;
  /** Open invoices whose due date is before their tenant's today and that were not yet announced; marks them and writes events. */
  markOverdue(today: (tenant: Tenant) => string, batchMax: number, events: (invoice: Invoice, today: string) => PendingEvent[]): Promise<number>;
}

export interface PostingStore {
  /**
   * Step 3: the post is done; records its transaction (on the invoice or the payment too) and writes its events,
   * built from the invoice as it stands then, once: false when another driver settled it first.
   */
  settle(p: Posting, transactionId: string, events: (invoice: Invoice, payment: Payment | undefined) => PendingEvent[]): Promise<boolean>;
  /** A definitive refusal of the ledger: a bug for postings between system accounts; kept visible, never retried. */
  fail(p: Posting, code: string): Promise<void>;
  /** The intent of a payment. */
  ofPayment(tenant: Tenant, paymentId: string): Promise<Posting | undefined>;
  /** Intents still pending after `graceMs`, oldest first. */
  stale(graceMs: number, limit: number): Promise<Posting[]>;
}

/** The ledger as invoicing sees it: posts, and the reads aging needs. */
export interface LedgerClient {
  post(req: PostRequestInput): Promise<LedgerPosted>;
  receivableBalances(tenant: Tenant, asOf: Date): Promise<schemas.ReceivableBalance[]>;
  openBills(tenant: Tenant, asOf: Date): Promise<schemas.OpenBill[]>;
}

export interface InvoicingDeps {
  invoices: InvoiceStore;
  postings: PostingStore;
  ledger: LedgerClient;
  /** The tenant's clock: real time in live, the org's test clock in sandbox (ADR 0017). */
  now: (tenant: Tenant) => Date;
  newId: (kind: "invoice" | "payment" | "posting") => string;
  /** Crash points of the recovery tests (no-ops otherwise). */
  afterIntent?: () => Promise<void>;
}
