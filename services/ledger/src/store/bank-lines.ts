/** Bank lines imported from statements, their imports, and saved CSV templates (migration 0005). */
import type { Tenant } from "@treasury/contracts";
import type { BankLineFilter, BankLineRow, NewBankLine, NewImport, TemplateRow } from "../usecases/rows.ts";
import { money, type Json, type Q } from "./db.ts";

/** Rows per INSERT statement: bounds one statement's parameters and memory. */
const INSERT_ROWS_MAX = 5000;

/** Saves a template, replacing the mapping of one with the same name; `created` says which happened. */
export async function upsertTemplate(
  q: Q,
  s: Tenant,
  t: { id: string; name: string; mapping: Record<string, unknown>; description: string | null },
): Promise<TemplateRow & { created: boolean }> {
  const [row] = await q<(TemplateRow & { created: boolean })[]>`
    insert into ledger.import_templates as t (id, org_id, livemode, name, mapping, description)
    values (${t.id}, ${s.orgId}, ${s.livemode}, ${t.name}, ${q.json(t.mapping as Json)}, ${t.description})
    on conflict (org_id, livemode, name) do update set mapping = excluded.mapping, description = excluded.description, updated_at = now()
    returning t.id, t.name, t.format, t.mapping, t.description, t.created_at, t.updated_at, (xmax = 0) as created`;
  if (row === undefined) throw new Error("template upsert returned no row");
  return row;
}

export async function findTemplate(q: Q, s: Tenant, id: string): Promise<TemplateRow | undefined> {
  const [row] = await q<TemplateRow[]>`
    select id, name, format, mapping, description, created_at, updated_at from ledger.import_templates
    where org_id = ${s.orgId} and livemode = ${s.livemode} and id = ${id}`;
  return row;
}

export async function listTemplates(q: Q, s: Tenant): Promise<TemplateRow[]> {
  return q<TemplateRow[]>`
    select id, name, format, mapping, description, created_at, updated_at from ledger.import_templates
    where org_id = ${s.orgId} and livemode = ${s.livemode} order by name`;
}

export async function insertImport(q: Q, s: Tenant, i: NewImport): Promise<void> {
  await q`
    insert into ledger.bank_imports (id, org_id, livemode, format, account_name, template_id, statements, lines, imported, duplicates, errors)
    values (${i.id}, ${s.orgId}, ${s.livemode}, ${i.format}, ${i.accountName}, ${i.templateId}, ${i.statements}, ${i.lines}, 0, 0, ${i.errors})`;
}

export async function settleImport(q: Q, s: Tenant, id: string, imported: number, duplicates: number): Promise<void> {
  await q`
    update ledger.bank_imports set imported = ${imported}, duplicates = ${duplicates}
    where org_id = ${s.orgId} and livemode = ${s.livemode} and id = ${id}`;
}

/**
 * Inserts bank lines; a line whose (account, date, amount, dedupe_ref) is already stored, by an earlier import,
 * a concurrent one, or earlier in this list, is skipped. Answers the ids that were inserted.
 */
export async function insertBankLines(q: Q, s: Tenant, importId: string, lines: readonly NewBankLine[]): Promise<Set<string>> {
  const inserted = new Set<string>();
  for (let from = 0; from < lines.length; from += INSERT_ROWS_MAX) {
    const chunk = lines.slice(from, from + INSERT_ROWS_MAX);
    const col = <T>(f: (l: NewBankLine) => T): T[] => chunk.map(f);
    const rows = await q<{ id: string }[]>`
      insert into ledger.bank_lines (id, org_id, livemode, import_id, bank_account, currency, booking_date, value_date, amount,
        amount_decimal, description, reference, bank_reference, counterparty, bank_code, line_no, dedupe_ref)
      select u.id, ${s.orgId}, ${s.livemode}, ${importId}, u.bank_account, u.currency, u.booking_date, u.value_date, u.amount,
        u.amount_decimal, u.description, u.reference, u.bank_reference, u.counterparty, u.bank_code, u.line_no, u.dedupe_ref
      from unnest(${col((l) => l.id)}::text[], ${col((l) => l.bankAccount)}::text[], ${col((l) => l.currency)}::text[],
        ${col((l) => l.bookingDate)}::date[], ${col((l) => l.valueDate)}::date[], ${col((l) => String(l.amount))}::bigint[],
        ${col((l) => l.amountDecimal)}::text[], ${col((l) => l.description)}::text[], ${col((l) => l.reference)}::text[],
        ${col((l) => l.bankReference)}::text[], ${col((l) => (l.counterparty === null ? null : JSON.stringify(l.counterparty)))}::jsonb[],
        ${col((l) => l.bankCode)}::text[], ${col((l) => l.lineNo)}::int[], ${col((l) => l.dedupeRef)}::text[])
        as u(id, bank_account, currency, booking_date, value_date, amount, amount_decimal, description, reference, bank_reference,
          counterparty, bank_code, line_no, dedupe_ref)
      on conflict (org_id, livemode, bank_account, booking_date, amount, dedupe_ref) do nothing
      returning id`;
    for (const r of rows) inserted.add(r.id);
  }
  return inserted;
}

type RawBankLine = Omit<BankLineRow, "amount"> & { amount: string };

const lineColumns = (q: Q) => q`
  b.id, b.import_id, b.bank_account, b.currency, to_char(b.booking_date, 'YYYY-MM-DD') as booking_date,
  to_char(b.value_date, 'YYYY-MM-DD') as value_date, b.amount, b.amount_decimal, b.description, b.reference,
  b.bank_reference, b.counterparty, b.bank_code, b.line_no, b.created_at`;

const toLine = (r: RawBankLine): BankLineRow => ({ ...r, amount: money(r.amount) });

export async function findBankLine(q: Q, s: Tenant, id: string): Promise<BankLineRow | undefined> {
  const [row] = await q<RawBankLine[]>`
    select ${lineColumns(q)} from ledger.bank_lines b where b.org_id = ${s.orgId} and b.livemode = ${s.livemode} and b.id = ${id}`;
  return row === undefined ? undefined : toLine(row);
}

/** Bank lines without an active match, oldest booking date first. */
export async function unmatchedBankLines(q: Q, s: Tenant, f: BankLineFilter, limit: number, offset: number): Promise<{ rows: BankLineRow[]; total: number }> {
  const where = q`
    b.org_id = ${s.orgId} and b.livemode = ${s.livemode}
    ${f.bankAccount !== undefined ? q`and b.bank_account = ${f.bankAccount}` : q``}
    ${f.from !== undefined ? q`and b.booking_date >= ${f.from}::date` : q``}
    ${f.to !== undefined ? q`and b.booking_date <= ${f.to}::date` : q``}
    and not exists (select 1 from ledger.reconciliation_matches m
      where m.org_id = ${s.orgId} and m.livemode = ${s.livemode} and m.bank_line_id = b.id and m.unmatched_at is null)`;
  const rows = await q<RawBankLine[]>`
    select ${lineColumns(q)} from ledger.bank_lines b where ${where} order by b.booking_date, b.id limit ${limit} offset ${offset}`;
  const [count] = await q<{ n: string }[]>`select count(*) as n from ledger.bank_lines b where ${where}`;
  return { rows: rows.map(toLine), total: Number(count?.n ?? 0) };
}

/** What auto-match needs of every unmatched bank line in a range (at most `limit`, oldest first). */
export async function unmatchedBankLinesForMatching(
  q: Q,
  s: Tenant,
  f: BankLineFilter,
  limit: number,
): Promise<{ id: string; date: string; amount: number; currency: string; reference: string; description: string }[]> {
  const rows = await q<{ id: string; date: string; amount: string | number; currency: string; reference: string; description: string }[]>`
    select b.id, to_char(b.booking_date, 'YYYY-MM-DD') as date, b.amount, b.currency,
      coalesce(nullif(b.reference, ''), b.bank_reference, '') as reference, b.description
    from ledger.bank_lines b
    where b.org_id = ${s.orgId} and b.livemode = ${s.livemode}
      ${f.bankAccount !== undefined ? q`and b.bank_account = ${f.bankAccount}` : q``}
      ${f.from !== undefined ? q`and b.booking_date >= ${f.from}::date` : q``}
      ${f.to !== undefined ? q`and b.booking_date <= ${f.to}::date` : q``}
      and not exists (select 1 from ledger.reconciliation_matches m
        where m.org_id = ${s.orgId} and m.livemode = ${s.livemode} and m.bank_line_id = b.id and m.unmatched_at is null)
    order by b.booking_date, b.id limit ${limit}`;
  // Converted in place: a second object per row would double what 100,000 lines hold.
  for (const r of rows) r.amount = money(r.amount);
  return rows as { id: string; date: string; amount: number; currency: string; reference: string; description: string }[];
}
