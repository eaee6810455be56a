/**
 * The invoicing rows `admin find` reaches: an invoice by its id (with its lines, payments and ledger intents), and
 * a payment by its id (with its invoice's intents).
 */
import type { FindHit, FindNode, FindRowsReply, FindRowsRequest } from "@treasury/contracts";
import { hitsOf, type AdminFinder, type Sql } from "@treasury/service-kit";

const idsOf = (nodes: readonly FindNode[], kind: string): string[] => [...new Set(nodes.filter((n) => n.kind === kind).map((n) => n.id))];

async function byIds(sql: Sql, nodes: readonly FindNode[]): Promise<FindHit[]> {
  const payments = idsOf(nodes, "invoice_payment");
  const paid = payments.length === 0 ? [] : await sql<{ invoice_id: string }[]>`select * from invoicing.invoice_payments where id = any(${payments}::text[])`;
  const invoices = [...new Set([...idsOf(nodes, "invoice"), ...paid.map((p) => p.invoice_id)])];
  const hits: FindHit[] = [];
  if (invoices.length === 0) return hits;
  hits.push(...hitsOf("invoicing.invoices", await sql`select * from invoicing.invoices where id = any(${invoices}::text[])`, true));
  hits.push(...hitsOf("invoicing.invoice_lines", await sql`select * from invoicing.invoice_lines where invoice_id = any(${invoices}::text[])`, false));
  hits.push(...hitsOf("invoicing.invoice_payments", await sql`select * from invoicing.invoice_payments where invoice_id = any(${invoices}::text[])`, true));
  hits.push(...hitsOf("invoicing.ledger_postings", await sql`select * from invoicing.ledger_postings where invoice_id = any(${invoices}::text[])`, true));
  return hits;
}

export function pgInvoicingFinder(sql: Sql): AdminFinder {
  return { rows: async (r: FindRowsRequest): Promise<FindRowsReply> => ({ hits: await byIds(sql, r.nodes), nodes: [] }) };
}
