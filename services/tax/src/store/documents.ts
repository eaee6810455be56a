/**
 * SQL of tax documents (usecases/generate.ts, documents.ts, export.ts). Generation writes a page of participants in
 * one transaction: one statement inserts new drafts, updates changed ones and removes stale ones, and one more
 * writes the events of the documents it wrote into the outbox.
 */
import type { schemas, Tenant } from "@treasury/contracts";
import { markOutboxWritten, outboxRowValues, withTx, type Sql, type Tx } from "@treasury/service-kit";
import type { TaxDocument } from "../domain/documents.ts";
import type { DocumentStore, DraftWrite, PageProgress, PendingEvent } from "../usecases/ports.ts";
import { advanceTx } from "./generations.ts";

interface Row {
  id: string;
  org_id: string;
  livemode: boolean;
  tax_year: number;
  participant_id: string;
  form: schemas.TaxForm;
  status: schemas.TaxDocumentStatus;
  gross_cents: string;
  refunds_cents: string;
  transaction_count: number;
  monthly_cents: string[];
  recipient_tin_last4: string | null;
  corrects: string | null;
  corrected_by: string | null;
  correction_reason: string | null;
  filed_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

const COLS = `id, org_id, livemode, tax_year, participant_id, form, status, gross_cents::text, refunds_cents::text, transaction_count,
  monthly_cents::text[] as monthly_cents, recipient_tin_last4, corrects, corrected_by, correction_reason, filed_at, created_at, updated_at`;

function docOf(r: Row): TaxDocument {
  return {
    id: r.id,
    tenant: { orgId: r.org_id, livemode: r.livemode },
    taxYear: r.tax_year,
    participantId: r.participant_id,
    form: r.form,
    status: r.status,
    grossCents: Number(r.gross_cents),
    refundsCents: Number(r.refunds_cents),
    transactionCount: r.transaction_count,
    monthlyCents: r.monthly_cents.map(Number),
    recipientTinLast4: r.recipient_tin_last4,
    corrects: r.corrects,
    correctedBy: r.corrected_by,
    correctionReason: r.correction_reason,
    filedAt: r.filed_at,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

type Q = Sql | Tx;
const cols = (q: Q) => q.unsafe(COLS);

/** The figures of a page as JSON for jsonb_to_recordset (one parameter however many rows). */
function draftRows(drafts: readonly DraftWrite[]) {
  return drafts.map((w) => ({
    id: w.newId,
    participant_id: w.figures.participantId,
    form: w.form,
    gross_cents: w.figures.grossCents,
    refunds_cents: w.figures.refundsCents,
    transaction_count: w.figures.transactionCount,
    monthly_cents: `{${w.figures.monthlyCents.join(",")}}`,
  }));
}

async function insertEvents(tx: Tx, t: Tenant, events: readonly PendingEvent[]): Promise<void> {
  if (events.length === 0) return;
  const rows = events.map((e) => outboxRowValues({ type: e.type, org_id: t.orgId, livemode: t.livemode, data: e.data }));
  await tx`
    insert into tax.outbox (id, org_id, livemode, type, subject, payload, headers)
    select id, org_id, livemode, type, subject, payload, headers
    from jsonb_to_recordset(${tx.json(rows as never)}) as x(id text, org_id text, livemode boolean, type text, subject text, payload jsonb, headers jsonb)`;
  markOutboxWritten(tx, "tax");
}

type WrittenRow = Partial<Row> & { inserted: boolean | null; filed_n: number; removed_n: number };

/**
 * A page in one statement: each participant's figures inserted as a draft, or written over its current draft when
 * they (or its form, or the TIN's last four digits from its W-9 profile) changed; a filed document is left alone
 * (the conflict's update does not apply to it); drafts of `below` removed. It answers only the documents written,
 * with how many were filed and removed, so a page where nothing changed costs one statement and no JS per row.
 * Concurrent generations of a year meet on documents_current_uq, row by row in participant order: no duplicates,
 * no deadlock.
 */
async function writeDraftsTx(
  tx: Tx,
  t: Tenant,
  taxYear: number,
  drafts: readonly DraftWrite[],
  below: readonly string[],
  at: Date,
  event: (d: TaxDocument) => PendingEvent,
  progress: PageProgress | undefined,
) {
  const scope = tx`org_id = ${t.orgId} and livemode = ${t.livemode} and tax_year = ${taxYear}`;
  const rows = await tx<WrittenRow[]>`
    with x as (
      select * from jsonb_to_recordset(${tx.json(draftRows(drafts) as never)})
        as x(id text, participant_id text, form text, gross_cents bigint, refunds_cents bigint, transaction_count int, monthly_cents bigint[])
    ),
    filed as (
      select count(*)::int as n from tax.documents
      where ${scope} and status = 'filed' and participant_id in (select participant_id from x)
    ),
    removed as (
      delete from tax.documents where ${scope} and status = 'draft' and corrects is null and participant_id = any(${below as string[]}::text[])
      returning 1
    ),
    written as (
      insert into tax.documents as d (id, org_id, livemode, tax_year, participant_id, form, status, gross_cents, refunds_cents, transaction_count,
        monthly_cents, recipient_tin_last4, created_at, updated_at)
      select x.id, ${t.orgId}, ${t.livemode}, ${taxYear}, x.participant_id, x.form, 'draft', x.gross_cents, x.refunds_cents, x.transaction_count,
        x.monthly_cents, p.tin_last4, ${at}, ${at}
      from x left join tax.profiles p on p.org_id = ${t.orgId} and p.livemode = ${t.livemode} and p.participant_id = x.participant_id
      order by x.participant_id
      on conflict (org_id, livemode, tax_year, participant_id) where status <> 'corrected' do update set
        form = excluded.form, gross_cents = excluded.gross_cents, refunds_cents = excluded.refunds_cents, transaction_count = excluded.transaction_count,
        monthly_cents = excluded.monthly_cents, recipient_tin_last4 = excluded.recipient_tin_last4, updated_at = excluded.updated_at
      where d.status = 'draft'
        and (d.form, d.gross_cents, d.refunds_cents, d.transaction_count, d.monthly_cents, d.recipient_tin_last4)
          is distinct from (excluded.form, excluded.gross_cents, excluded.refunds_cents, excluded.transaction_count, excluded.monthly_cents,
            excluded.recipient_tin_last4)
      returning ${cols(tx)}, (xmax = 0) as inserted
    )
    select w.*, (select n from filed) as filed_n, (select count(*)::int from removed) as removed_n
    from (select 1) one left join written w on true`;
  const written = rows.filter((r): r is Row & WrittenRow => r.id !== null && r.id !== undefined).map((r) => ({ doc: docOf(r), inserted: r.inserted === true }));
  const created = written.filter((w) => w.inserted).length;
  const filed = rows[0]?.filed_n ?? 0;
  const removed = rows[0]?.removed_n ?? 0;
  await insertEvents(
    tx,
    t,
    written.map((w) => event(w.doc)),
  );
  const out = { created, updated: written.length - created, unchanged: drafts.length - written.length - filed, filed, removed };
  if (progress !== undefined) await advanceTx(tx, progress, out);
  return out;
}

/** The original leaves the current set first, so the successor can take its place in documents_current_uq. */
async function correctTx(
  tx: Tx,
  t: Tenant,
  id: string,
  s: Parameters<DocumentStore["correct"]>[2],
  at: Date,
  event: Parameters<DocumentStore["correct"]>[4],
): Promise<{ original: TaxDocument; corrected: TaxDocument } | undefined> {
  const [orig] = await tx<Row[]>`update tax.documents set status = 'corrected', updated_at = ${at}
          where id = ${id} and org_id = ${t.orgId} and livemode = ${t.livemode} and status = 'filed' returning ${cols(tx)}`;
  if (orig === undefined) return undefined;
  const [row] = await tx<Row[]>`
          insert into tax.documents (id, org_id, livemode, tax_year, participant_id, form, status, gross_cents, refunds_cents, transaction_count,
            monthly_cents, recipient_tin_last4, corrects, correction_reason, created_at, updated_at)
          values (${s.id}, ${t.orgId}, ${t.livemode}, ${orig.tax_year}, ${orig.participant_id}, ${s.form}, 'draft', ${s.figures.grossCents},
            ${s.figures.refundsCents}, ${s.figures.transactionCount}, ${`{${s.figures.monthlyCents.join(",")}}`}::bigint[], ${s.recipientTinLast4},
            ${id}, ${s.reason}, ${at}, ${at})
          returning ${cols(tx)}`;
  const [linked] = await tx<Row[]>`update tax.documents set corrected_by = ${s.id} where id = ${id} returning ${cols(tx)}`;
  if (row === undefined || linked === undefined) throw new Error(`correction of ${id} was not written`);
  const done = { original: docOf(linked), corrected: docOf(row) };
  await insertEvents(tx, t, [event(done.original, done.corrected)]);
  return done;
}

export function pgDocumentStore(sql: Sql): DocumentStore {
  const one = async (q: Q, where: ReturnType<Sql>) => {
    const [row] = await q<Row[]>`select ${cols(q)} from tax.documents where ${where}`;
    return row === undefined ? undefined : docOf(row);
  };
  return {
    writeDrafts: (t, taxYear, drafts, below, at, event, progress) => withTx(sql, (tx) => writeDraftsTx(tx, t, taxYear, drafts, below, at, event, progress)),
    get: (t, id) => one(sql, sql`id = ${id} and org_id = ${t.orgId} and livemode = ${t.livemode}`),
    async list(t, q) {
      const where = sql`org_id = ${t.orgId} and livemode = ${t.livemode}
        and (${q.taxYear ?? null}::int is null or tax_year = ${q.taxYear ?? null})
        and (${q.status ?? null}::text is null or status = ${q.status ?? null})
        and (${q.participantId ?? null}::text is null or participant_id = ${q.participantId ?? null})`;
      const rows = await sql<Row[]>`select ${cols(sql)} from tax.documents where ${where}
        order by tax_year desc, participant_id, created_at, id limit ${q.limit} offset ${q.offset}`;
      const [count] = await sql<{ n: number }[]>`select count(*)::int as n from tax.documents where ${where}`;
      return { documents: rows.map(docOf), total: count?.n ?? 0 };
    },
    markFiled: (t, id, at, event) =>
      withTx(sql, async (tx) => {
        const [row] = await tx<Row[]>`update tax.documents set status = 'filed', filed_at = ${at}, updated_at = ${at}
          where id = ${id} and org_id = ${t.orgId} and livemode = ${t.livemode} and status = 'draft' returning ${cols(tx)}`;
        if (row === undefined) return undefined;
        const doc = docOf(row);
        await insertEvents(tx, t, [event(doc)]);
        return doc;
      }),
    correct: (t, id, s, at, event) => withTx(sql, (tx) => correctTx(tx, t, id, s, at, event)),
    async countCurrent(t, taxYear) {
      const [row] = await sql<{ n: number }[]>`select count(*)::int as n from tax.documents
        where org_id = ${t.orgId} and livemode = ${t.livemode} and tax_year = ${taxYear} and status <> 'corrected'`;
      return row?.n ?? 0;
    },
    async *current(t, taxYear, pageSize) {
      // Keyset pages in (form, participant_id) order: FIRE groups payees by form; each page is one indexed read.
      let after = { form: "", participant: "" };
      for (;;) {
        const rows = await sql<Row[]>`select ${cols(sql)} from tax.documents
          where org_id = ${t.orgId} and livemode = ${t.livemode} and tax_year = ${taxYear} and status <> 'corrected'
            and (form, participant_id) > (${after.form}, ${after.participant})
          order by form, participant_id limit ${pageSize}`;
        if (rows.length > 0) yield rows.map(docOf);
        const last = rows[rows.length - 1];
        if (last === undefined || rows.length < pageSize) return;
        after = { form: last.form, participant: last.participant_id };
      }
    },
    async summary(t, taxYear) {
      const rows = await sql<{ form: string; status: string; count: number; reported: string }[]>`
        select form, status, count(*)::int as count,
          sum(case when form = '1099-NEC' then gross_cents - refunds_cents else gross_cents end)::text as reported
        from tax.documents where org_id = ${t.orgId} and livemode = ${t.livemode} and tax_year = ${taxYear}
        group by form, status order by form, status`;
      return rows.map((r) => ({ form: r.form, status: r.status, count: r.count, reportedCents: Number(r.reported) }));
    },
  };
}
