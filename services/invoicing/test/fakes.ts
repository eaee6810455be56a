/**
 * In-memory fakes of the invoicing ports, for the use cases' unit tests: the same semantics as the PostgreSQL
 * stores where the use cases rely on them (a transition sees the invoice as the previous one left it; a taken
 * payment reference is duplicate_reference_id; settling twice settles once), none of their SQL.
 */
import { cents, DomainError, type PostRequestInput, type Tenant } from "@treasury/contracts";
import type { LedgerPosted } from "@treasury/service-kit";
import { invoiceNumber, shownStatus, type Invoice, type Payment } from "../src/domain/invoice.ts";
import type { InvoicingDeps, PendingEvent, Posting } from "../src/usecases/ports.ts";

const key = (t: Tenant) => `${t.orgId}|${t.livemode}`;
const mine = (t: Tenant, x: { org_id: string; livemode: boolean }) => x.org_id === t.orgId && x.livemode === t.livemode;

export interface Fakes {
  deps: InvoicingDeps;
  events: PendingEvent[];
  posts: PostRequestInput[];
  postings: Posting[];
  today: { value: string };
}

interface State {
  invoices: Map<string, Invoice>;
  payments: (Payment & { request_hash: string; org_id: string; livemode: boolean })[];
  postings: Posting[];
  counters: Map<string, number>;
  events: PendingEvent[];
}

function createFake(st: State): InvoicingDeps["invoices"]["create"] {
  return async (t, inv, evts) => {
    const n = (st.counters.get(key(t)) ?? 0) + 1;
    st.counters.set(key(t), n);
    const created: Invoice = {
      ...inv,
      org_id: t.orgId,
      livemode: t.livemode,
      number: invoiceNumber(n),
      status: "draft",
      total_cents: cents(inv.total_cents),
      amount_paid_cents: cents(0),
      send_transaction_id: null,
      void_transaction_id: null,
      created_at: new Date(),
      sent_at: null,
      paid_at: null,
      voided_at: null,
    };
    st.invoices.set(created.id, created);
    st.events.push(...evts(created));
    return created;
  };
}

function transitionFake(st: State): InvoicingDeps["invoices"]["transition"] {
  return async (t, id, decide) => {
    const locked = st.invoices.get(id);
    if (locked === undefined || !mine(t, locked)) return undefined;
    const next = decide(locked);
    if (next.payment !== undefined) {
      const p = next.payment;
      if (st.payments.some((x) => mine(t, x) && x.reference_id === p.reference_id)) throw new DomainError("duplicate_reference_id", "taken");
      st.payments.push({ ...p, transaction_id: null, created_at: new Date(), org_id: t.orgId, livemode: t.livemode });
    }
    const posting = next.posting === undefined ? undefined : { ...next.posting, status: "pending" as const, transaction_id: null };
    if (posting !== undefined) st.postings.push(posting);
    const stamp = next.stamp === undefined ? {} : { [next.stamp]: new Date() };
    const after: Invoice = { ...locked, status: next.status, amount_paid_cents: cents(next.amount_paid_cents), ...stamp };
    st.invoices.set(id, after);
    if (next.events !== undefined) st.events.push(...next.events(after));
    return { invoice: after, posting };
  };
}

function invoiceStore(st: State): InvoicingDeps["invoices"] {
  const all = () => [...st.invoices.values()];
  return {
    create: createFake(st),
    get: async (t, id) => all().find((i) => mine(t, i) && i.id === id),
    byId: async (id) => st.invoices.get(id),
    many: async (t, ids) => all().filter((i) => mine(t, i) && ids.includes(i.id)),
    findByReference: async (t, ref) => all().find((i) => mine(t, i) && i.reference_id === ref),
    findByNumber: async (t, n) => all().find((i) => mine(t, i) && i.number === n),
    findBySendTransaction: async (t, txn) => all().find((i) => mine(t, i) && i.send_transaction_id === txn),
    list: async (t, f) => {
      const found = all().filter((i) => mine(t, i) && (f.status === undefined || shownStatus(i, f.today) === f.status));
      return { invoices: found.slice(f.offset, f.offset + f.limit), total: found.length };
    },
    payments: async (t, id) => st.payments.filter((p) => mine(t, p) && p.invoice_id === id),
    findPayment: async (t, ref) => st.payments.find((p) => mine(t, p) && p.reference_id === ref),
    transition: transitionFake(st),
    markOverdue: async () => 0,
  };
}

function postingStore(st: State): InvoicingDeps["postings"] {
  return {
    async settle(p, txn, evts) {
      const row = st.postings.find((x) => x.id === p.id);
      if (row === undefined || row.status !== "pending") return false;
      row.status = "posted";
      row.transaction_id = txn;
      const inv = st.invoices.get(p.invoice_id);
      if (inv === undefined) throw new Error("no invoice");
      const updated = { ...inv, ...(p.action === "send" ? { send_transaction_id: txn } : p.action === "void" ? { void_transaction_id: txn } : {}) };
      st.invoices.set(inv.id, updated);
      const payment = st.payments.find((x) => x.id === p.payment_id);
      if (payment !== undefined) payment.transaction_id = txn;
      st.events.push(...evts(updated, payment));
      return true;
    },
    async fail(p) {
      const row = st.postings.find((x) => x.id === p.id);
      if (row !== undefined) row.status = "failed";
    },
    ofPayment: async (_t, id) => st.postings.find((p) => p.payment_id === id),
    stale: async (_grace, limit) => st.postings.filter((p) => p.status === "pending").slice(0, limit),
  };
}

export function fakes(): Fakes {
  const st: State = { invoices: new Map(), payments: [], postings: [], counters: new Map(), events: [] };
  const posts: PostRequestInput[] = [];
  const today = { value: "2026-01-15" };
  let seq = 0;
  const deps: InvoicingDeps = {
    now: () => new Date(`${today.value}T12:00:00Z`),
    newId: (kind) => `${kind === "invoice" ? "inv" : kind === "payment" ? "invp" : "ilp"}_${String(++seq).padStart(6, "0")}`,
    ledger: {
      post: async (req) => {
        posts.push(req);
        return { transaction_id: `txn_${posts.length}`, duplicate: false } as LedgerPosted;
      },
      receivableBalances: async () => [],
      openBills: async () => [],
    },
    invoices: invoiceStore(st),
    postings: postingStore(st),
  };
  return { deps, events: st.events, posts, postings: st.postings, today };
}
