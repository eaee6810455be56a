/**
 * SQL of invoices, their lines and payments (invoicing schema). Every query filters by org and environment. The
 * number is taken from the tenant's counter row, locked by the transaction that inserts the invoice; a payment's
 * check against the amount due runs under the invoice's row lock.
 */
import { DomainError, type Tenant } from "@treasury/contracts";
import { withTx, type Sql, type Tx } from "@treasury/service-kit";
import postgres from "postgres";
import { invoiceNumber, type Invoice } from "../domain/invoice.ts";
import type { InvoiceFilter, InvoiceStore, NewInvoice, PendingEvent, Posting, Transition } from "../usecases/ports.ts";
import {
  INVOICE_COLS,
  PAYMENT_COLS,
  paymentOf,
  POSTING_COLS,
  postingOf,
  withLines,
  writeEvents,
  type InvoiceRow,
  type PaymentRow,
  type PostingRow,
  type Q,
} from "./rows.ts";

const cols = (q: Q) => q.unsafe(INVOICE_COLS);
const tenantOf = (inv: Pick<Invoice, "org_id" | "livemode">): Tenant => ({ orgId: inv.org_id, livemode: inv.livemode });

function uniqueOn(e: unknown, constraint: string): boolean {
  return e instanceof postgres.PostgresError && e.code === "23505" && e.constraint_name === constraint;
}

async function one(q: Q, where: postgres.PendingQuery<postgres.Row[]>, lock = false): Promise<Invoice | undefined> {
  const rows = await q<InvoiceRow[]>`select ${cols(q)} from invoicing.invoices where ${where} ${lock ? q`for update` : q``}`;
  return (await withLines(q, rows))[0];
}

/** The next number of the tenant: the counter row is created or locked here and held until the insert commits. */
async function nextSeq(tx: Tx, t: Tenant): Promise<number> {
  const [row] = await tx<{ last_seq: string }[]>`
    insert into invoicing.invoice_counters (org_id, livemode, last_seq) values (${t.orgId}, ${t.livemode}, 1)
    on conflict (org_id, livemode) do update set last_seq = invoice_counters.last_seq + 1
    returning last_seq::text`;
  if (row === undefined) throw new Error("invoice counter not returned");
  return Number(row.last_seq);
}

async function insertInvoice(tx: Tx, t: Tenant, inv: NewInvoice): Promise<void> {
  const seq = await nextSeq(tx, t);
  await tx`
    insert into invoicing.invoices (id, org_id, livemode, seq, number, customer_name, customer_email, customer_id, customer_address,
      issue_date, due_date, notes, terms, reference_id, request_hash, metadata, status, total_cents, hosted_url)
    values (${inv.id}, ${t.orgId}, ${t.livemode}, ${seq}, ${invoiceNumber(seq)}, ${inv.customer_name}, ${inv.customer_email}, ${inv.customer_id},
      ${inv.customer_address === null ? null : tx.json(inv.customer_address as postgres.JSONValue)}, ${inv.issue_date}, ${inv.due_date},
      ${inv.notes}, ${inv.terms}, ${inv.reference_id}, ${inv.request_hash}, ${tx.json(inv.metadata as postgres.JSONValue)}, 'draft',
      ${inv.total_cents}, ${inv.hosted_url})`;
  const lines = inv.lines.map((l) => ({
    invoice_id: inv.id,
    line_no: l.line_no,
    description: l.description,
    quantity: l.quantity,
    unit_price_cents: l.unit_price_cents,
    amount_cents: l.amount_cents,
  }));
  await tx`insert into invoicing.invoice_lines ${tx(lines)}`;
}

async function insertPosting(tx: Tx, p: NonNullable<Transition["posting"]>): Promise<Posting> {
  const [row] = await tx<PostingRow[]>`
    insert into invoicing.ledger_postings (id, org_id, livemode, invoice_id, action, payment_id, ledger_kind, ledger_reference, amount_cents,
      effective_date, event_types, status)
    values (${p.id}, ${p.org_id}, ${p.livemode}, ${p.invoice_id}, ${p.action}, ${p.payment_id}, ${p.ledger_kind}, ${p.ledger_reference},
      ${p.amount_cents}, ${p.effective_date}, ${p.event_types}, 'pending')
    returning ${tx.unsafe(POSTING_COLS)}`;
  if (row === undefined) throw new Error("posting not returned");
  return postingOf(row);
}

async function insertPayment(tx: Tx, t: Tenant, p: NonNullable<Transition["payment"]>): Promise<void> {
  try {
    await tx`
      insert into invoicing.invoice_payments (id, org_id, livemode, invoice_id, reference_id, request_hash, amount_cents, paid_at, payment_method, source, metadata)
      values (${p.id}, ${t.orgId}, ${t.livemode}, ${p.invoice_id}, ${p.reference_id}, ${p.request_hash}, ${p.amount_cents}, ${p.paid_at},
        ${p.payment_method}, ${p.source}, ${tx.json(p.metadata as postgres.JSONValue)})`;
  } catch (e) {
    // The caller reads the payment that took the reference and answers it (record-payment.ts).
    if (uniqueOn(e, "invoice_payments_reference_uq")) throw new DomainError("duplicate_reference_id", `reference_id ${p.reference_id} is taken`);
    throw e;
  }
}

async function applyTransition(tx: Tx, t: Tenant, locked: Invoice, next: Transition): Promise<{ invoice: Invoice; posting: Posting | undefined }> {
  if (next.payment !== undefined) await insertPayment(tx, t, next.payment);
  const posting = next.posting === undefined ? undefined : await insertPosting(tx, next.posting);
  const stamp = next.stamp;
  await tx`
    update invoicing.invoices set status = ${next.status}, amount_paid_cents = ${next.amount_paid_cents}
      ${stamp === undefined ? tx`` : tx`, ${tx(stamp)} = now()`}
    where id = ${locked.id}`;
  const invoice = await one(tx, tx`id = ${locked.id}`);
  if (invoice === undefined) throw new Error(`invoice ${locked.id} vanished in its own transaction`);
  if (next.events !== undefined) await writeEvents(tx, t, next.events(invoice));
  return { invoice, posting };
}

async function markOverdueOf(sql: Sql, t: Tenant, today: string, limit: number, events: (invoice: Invoice, today: string) => PendingEvent[]): Promise<number> {
  return withTx(sql, async (tx) => {
    const rows = await tx<InvoiceRow[]>`
      update invoicing.invoices set overdue_at = now()
      where id in (select id from invoicing.invoices where org_id = ${t.orgId} and livemode = ${t.livemode} and status in ('sent', 'partially_paid')
                   and overdue_at is null and due_date < ${today}::date order by due_date, id limit ${limit} for update skip locked)
      returning ${cols(tx)}`;
    for (const inv of await withLines(tx, rows)) await writeEvents(tx, t, events(inv, today));
    return rows.length;
  });
}

async function listInvoices(sql: Sql, t: Tenant, f: InvoiceFilter): Promise<{ invoices: Invoice[]; total: number }> {
  const open = sql`status in ('sent', 'partially_paid')`;
  const status =
    f.status === undefined
      ? sql``
      : f.status === "overdue"
        ? sql`and ${open} and due_date < ${f.today}::date`
        : f.status === "sent" || f.status === "partially_paid"
          ? sql`and status = ${f.status} and due_date >= ${f.today}::date`
          : sql`and status = ${f.status}`;
  const where = sql`org_id = ${t.orgId} and livemode = ${t.livemode} ${status} ${f.customer_id === undefined ? sql`` : sql`and customer_id = ${f.customer_id}`}`;
  const rows = await sql<
    InvoiceRow[]
  >`select ${cols(sql)} from invoicing.invoices where ${where} order by created_at desc, id desc limit ${f.limit} offset ${f.offset}`;
  const [count] = await sql<{ total: number }[]>`select count(*)::int as total from invoicing.invoices where ${where}`;
  return { invoices: await withLines(sql, rows), total: count?.total ?? 0 };
}

/**
 * Each tenant with open invoices not yet announced overdue, on its own today (sandboxes run on their clocks):
 * those with the earliest due dates first, so a tenant with nothing due yet never holds up one that has.
 */
async function markOverdueAll(
  sql: Sql,
  today: (tenant: Tenant) => string,
  batchMax: number,
  events: (invoice: Invoice, today: string) => PendingEvent[],
): Promise<number> {
  const tenants = await sql<{ org_id: string; livemode: boolean }[]>`
    select org_id, livemode from invoicing.invoices where status in ('sent', 'partially_paid') and overdue_at is null
    group by org_id, livemode order by min(due_date) limit ${batchMax}`;
  let marked = 0;
  for (const r of tenants) {
    const t = { orgId: r.org_id, livemode: r.livemode };
    marked += await markOverdueOf(sql, t, today(t), batchMax, events);
  }
  return marked;
}

export function pgInvoiceStore(sql: Sql): InvoiceStore {
  return {
    async create(t, inv, events) {
      try {
        return await withTx(sql, async (tx) => {
          await insertInvoice(tx, t, inv);
          const created = await one(tx, tx`id = ${inv.id}`);
          if (created === undefined) throw new Error(`invoice ${inv.id} not read back`);
          await writeEvents(tx, t, events(created));
          return created;
        });
      } catch (e) {
        if (uniqueOn(e, "invoices_reference_uq")) return undefined;
        throw e;
      }
    },
    byId: (id) => one(sql, sql`id = ${id}`),
    get: (t, id) => one(sql, sql`org_id = ${t.orgId} and livemode = ${t.livemode} and id = ${id}`),
    async many(t, ids) {
      if (ids.length === 0) return [];
      const rows = await sql<
        InvoiceRow[]
      >`select ${cols(sql)} from invoicing.invoices where org_id = ${t.orgId} and livemode = ${t.livemode} and id = any(${[...ids]})`;
      return withLines(sql, rows);
    },
    findByReference: (t, ref) => one(sql, sql`org_id = ${t.orgId} and livemode = ${t.livemode} and reference_id = ${ref}`),
    findByNumber: (t, number) => one(sql, sql`org_id = ${t.orgId} and livemode = ${t.livemode} and number = ${number}`),
    findBySendTransaction: (t, txn) => one(sql, sql`org_id = ${t.orgId} and livemode = ${t.livemode} and send_transaction_id = ${txn}`),
    list: (t, f) => listInvoices(sql, t, f),
    async payments(t, invoiceId) {
      const rows = await sql<PaymentRow[]>`
        select ${sql.unsafe(PAYMENT_COLS)} from invoicing.invoice_payments
        where org_id = ${t.orgId} and livemode = ${t.livemode} and invoice_id = ${invoiceId} order by created_at, id`;
      return rows.map(paymentOf);
    },
    async findPayment(t, ref) {
      const [row] = await sql<PaymentRow[]>`
        select ${sql.unsafe(PAYMENT_COLS)} from invoicing.invoice_payments where org_id = ${t.orgId} and livemode = ${t.livemode} and reference_id = ${ref}`;
      return row === undefined ? undefined : paymentOf(row);
    },
    async transition(t, id, decide) {
      return withTx(sql, async (tx) => {
        const locked = await one(tx, tx`org_id = ${t.orgId} and livemode = ${t.livemode} and id = ${id}`, true);
        if (locked === undefined) return undefined;
        return applyTransition(tx, tenantOf(locked), locked, decide(locked));
      });
    },
    markOverdue: (today, batchMax, events) => markOverdueAll(sql, today, batchMax, events),
  };
}
