/**
 * SQL of the ledger intents (invoicing.ledger_postings): settling one records its transaction where the API shows
 * it (the invoice's send or void transaction, the payment's) and writes its events, in one transaction, once.
 */
import type { Tenant } from "@treasury/contracts";
import { withTx, type Sql } from "@treasury/service-kit";
import type { PostingStore } from "../usecases/ports.ts";
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
} from "./rows.ts";

export function pgPostingStore(sql: Sql): PostingStore {
  return {
    async settle(p, transactionId, events) {
      return withTx(sql, async (tx) => {
        const done = await tx`
          update invoicing.ledger_postings set status = 'posted', transaction_id = ${transactionId}, posted_at = now()
          where id = ${p.id} and status = 'pending' returning id`;
        if (done.length === 0) return false;
        if (p.action === "send") await tx`update invoicing.invoices set send_transaction_id = ${transactionId} where id = ${p.invoice_id}`;
        if (p.action === "void") await tx`update invoicing.invoices set void_transaction_id = ${transactionId} where id = ${p.invoice_id}`;
        if (p.payment_id !== null) await tx`update invoicing.invoice_payments set transaction_id = ${transactionId} where id = ${p.payment_id}`;
        const rows = await tx<InvoiceRow[]>`select ${tx.unsafe(INVOICE_COLS)} from invoicing.invoices where id = ${p.invoice_id}`;
        const [invoice] = await withLines(tx, rows);
        if (invoice === undefined) throw new Error(`invoice ${p.invoice_id} of posting ${p.id} not found`);
        const [payment] =
          p.payment_id === null ? [] : await tx<PaymentRow[]>`select ${tx.unsafe(PAYMENT_COLS)} from invoicing.invoice_payments where id = ${p.payment_id}`;
        const tenant: Tenant = { orgId: p.org_id, livemode: p.livemode };
        await writeEvents(tx, tenant, events(invoice, payment === undefined ? undefined : paymentOf(payment)));
        return true;
      });
    },
    async fail(p, code) {
      await sql`update invoicing.ledger_postings set status = 'failed', failure_code = ${code} where id = ${p.id} and status = 'pending'`;
    },
    async ofPayment(t, paymentId) {
      const [row] = await sql<PostingRow[]>`
        select ${sql.unsafe(POSTING_COLS)} from invoicing.ledger_postings
        where org_id = ${t.orgId} and livemode = ${t.livemode} and payment_id = ${paymentId}`;
      return row === undefined ? undefined : postingOf(row);
    },
    async stale(graceMs, limit) {
      const rows = await sql<PostingRow[]>`
        select ${sql.unsafe(POSTING_COLS)} from invoicing.ledger_postings
        where status = 'pending' and created_at < now() - make_interval(secs => ${graceMs / 1000})
        order by created_at limit ${limit}`;
      return rows.map(postingOf);
    },
  };
}
