/**
 * SQL of tax documents (usecases/generate.ts, documents.ts, export.ts). Generation writes a page of participants in
 * one transaction with set-based statements: the current documents locked, new drafts inserted, changed drafts
 * updated, stale drafts removed, and their events inserted into the outbox in one statement.
 */
import type { schemas, Tenant } from "@treasury/contracts";
import { markOutboxWritten, outboxRowValues, withTx, type Sql, type Tx } from "@treasury/service-kit";
import { sameFigures, type TaxDocument } from "../domain/documents.ts";
import type { DocumentStore, DraftWrite, PendingEvent } from "../usecases/ports.ts";

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

/** The rows of a page as JSON for jsonb_to_recordset (one parameter however many rows). */
function draftRows(t: Tenant, taxYear: number, docs: readonly TaxDocument[]) {
  return docs.map((d) => ({
    id: d.id,
    org_id: t.orgId,
    livemode: t.livemode,
    tax_year: taxYear,
    participant_id: d.participantId,
    form: d.form,
    gross_cents: d.grossCents,
    refunds_cents: d.refundsCents,
    transaction_count: d.transactionCount,
    monthly_cents: `{${d.monthlyCents.join(",")}}`,
    recipient_tin_last4: d.recipientTinLast4,
    updated_at: d.updatedAt.toISOString(),
  }));
}

const RECORDSET = `x(id text, org_id text, livemode boolean, tax_year int, participant_id text, form text, gross_cents bigint, refunds_cents bigint,
  transaction_count int, monthly_cents bigint[], recipient_tin_last4 text, updated_at timestamptz)`;

async function insertEvents(tx: Tx, t: Tenant, events: readonly PendingEvent[]): Promise<void> {
  if (events.length === 0) return;
  const rows = events.map((e) => outboxRowValues({ type: e.type, org_id: t.orgId, livemode: t.livemode, data: e.data }));
  await tx`
    insert into tax.outbox (id, org_id, livemode, type, subject, payload, headers)
    select id, org_id, livemode, type, subject, payload, headers
    from jsonb_to_recordset(${tx.json(rows as never)}) as x(id text, org_id text, livemode boolean, type text, subject text, payload jsonb, headers jsonb)`;
  markOutboxWritten(tx, "tax");
}

function draftOf(t: Tenant, taxYear: number, w: DraftWrite, existing: TaxDocument | undefined, at: Date): TaxDocument {
  return {
    id: existing?.id ?? w.newId,
    tenant: t,
    taxYear,
    ...w.figures,
    form: w.form,
    status: "draft",
    recipientTinLast4: w.recipientTinLast4,
    corrects: existing?.corrects ?? null,
    correctedBy: null,
    correctionReason: existing?.correctionReason ?? null,
    filedAt: null,
    createdAt: existing?.createdAt ?? at,
    updatedAt: at,
  };
}

async function writeDraftsTx(
  tx: Tx,
  t: Tenant,
  taxYear: number,
  drafts: readonly DraftWrite[],
  below: readonly string[],
  at: Date,
  event: (d: TaxDocument) => PendingEvent,
) {
  const ids = [...drafts.map((d) => d.figures.participantId), ...below];
  // Locked in participant order: two generations of one year wait for each other page by page, never deadlock.
  const current = (
    await tx<Row[]>`
      select ${cols(tx)} from tax.documents
      where org_id = ${t.orgId} and livemode = ${t.livemode} and tax_year = ${taxYear} and status <> 'corrected'
        and participant_id = any(${ids}) order by participant_id for update`
  ).map(docOf);
  const byParticipant = new Map(current.map((d) => [d.participantId, d]));
  const out = { created: 0, updated: 0, unchanged: 0, filed: 0, removed: 0 };
  const inserts: TaxDocument[] = [];
  const updates: TaxDocument[] = [];
  for (const w of drafts) {
    const existing = byParticipant.get(w.figures.participantId);
    if (existing?.status === "filed") out.filed += 1;
    else if (existing === undefined) inserts.push(draftOf(t, taxYear, w, undefined, at));
    else if (sameFigures(existing, w.figures) && existing.form === w.form && existing.recipientTinLast4 === w.recipientTinLast4) out.unchanged += 1;
    else updates.push(draftOf(t, taxYear, w, existing, at));
  }
  if (inserts.length > 0) {
    await tx`
      insert into tax.documents (id, org_id, livemode, tax_year, participant_id, form, status, gross_cents, refunds_cents, transaction_count,
        monthly_cents, recipient_tin_last4, created_at, updated_at)
      select id, org_id, livemode, tax_year, participant_id, form, 'draft', gross_cents, refunds_cents, transaction_count, monthly_cents,
        recipient_tin_last4, updated_at, updated_at
      from jsonb_to_recordset(${tx.json(draftRows(t, taxYear, inserts) as never)}) as ${tx.unsafe(RECORDSET)}`;
  }
  if (updates.length > 0) {
    await tx`
      update tax.documents d set form = x.form, gross_cents = x.gross_cents, refunds_cents = x.refunds_cents, transaction_count = x.transaction_count,
        monthly_cents = x.monthly_cents, recipient_tin_last4 = x.recipient_tin_last4, updated_at = x.updated_at
      from jsonb_to_recordset(${tx.json(draftRows(t, taxYear, updates) as never)}) as ${tx.unsafe(RECORDSET)}
      where d.id = x.id and d.status = 'draft'`;
  }
  const stale = below.filter((p) => byParticipant.get(p)?.status === "draft");
  if (stale.length > 0) {
    await tx`delete from tax.documents where org_id = ${t.orgId} and livemode = ${t.livemode} and tax_year = ${taxYear}
      and status = 'draft' and corrects is null and participant_id = any(${stale})`;
  }
  out.removed = stale.length;
  out.created = inserts.length;
  out.updated = updates.length;
  await insertEvents(tx, t, [...inserts, ...updates].map(event));
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
    writeDrafts: (t, taxYear, drafts, below, at, event) => withTx(sql, (tx) => writeDraftsTx(tx, t, taxYear, drafts, below, at, event)),
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
