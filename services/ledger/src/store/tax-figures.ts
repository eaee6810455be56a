/**
 * SQL of the tax service's reads (usecases/tax-figures.ts). A participant's year is three kinds of rows, each found
 * through an index by participant (migrations/0013_tax_reads.sql): its sales (gross), its refunds, and reversals of
 * its sales (positive) or of its refunds (negative), all by accounting time, coalesce(effective_at, created_at).
 */
import type { schemas, Tenant } from "@treasury/contracts";
import type { Sql } from "@treasury/service-kit";
import type { TaxFiguresReader, YearWindow } from "../usecases/tax-figures.ts";

interface SourceRow {
  participant_id: string;
  role: "sale" | "refund";
  transaction_id: string;
  kind: string;
  amount: string;
  accounted_at: Date;
}

/**
 * Which participants: named ones, or a page's range of consecutive ids (every participant between the first and
 * the last is in the page), which each index answers with one range scan instead of a descent per id.
 */
export type Who = { ids: readonly string[] } | { from: string; to: string };

function whoIs(sql: Sql, column: ReturnType<Sql>, who: Who) {
  return "ids" in who ? sql`${column} = any(${who.ids as string[]})` : sql`${column} between ${who.from} and ${who.to}`;
}

/** The rows behind the figures of `who` in the window, as one query (the figures group it, the sources page it). */
function sourceRows(sql: Sql, t: Tenant, who: Who, w: YearWindow) {
  const at = sql`coalesce(t.effective_at, t.created_at)`;
  const inYear = sql`${at} >= ${w.from} and ${at} < ${w.to}`;
  const sale = whoIs(sql, sql`s.participant_id`, who);
  const refund = whoIs(sql, sql`(t.result -> 'extra' -> 'refund' ->> 'participant_id')`, who);
  const reversedRefund = whoIs(sql, sql`(r.result -> 'extra' -> 'refund' ->> 'participant_id')`, who);
  return sql`
    select s.participant_id, 'sale' as role, t.id as transaction_id, t.kind, s.gross::text as amount, ${at} as accounted_at
    from ledger.sales s join ledger.transactions t on t.id = s.transaction_id
    where s.org_id = ${t.orgId} and s.livemode = ${t.livemode} and ${sale} and ${inYear}
    union all
    select t.result -> 'extra' -> 'refund' ->> 'participant_id', 'refund', t.id, t.kind, t.amount::text, ${at}
    from ledger.transactions t
    where t.org_id = ${t.orgId} and t.livemode = ${t.livemode} and t.kind = 'refund'
      and ${refund} and ${inYear}
    union all
    select s.participant_id, 'refund', t.id, t.kind, t.amount::text, ${at}
    from ledger.sales s join ledger.transactions t
      on t.org_id = s.org_id and t.livemode = s.livemode and t.kind = 'reversal' and (t.result -> 'extra' ->> 'reversed_transaction_id') = s.transaction_id
    where s.org_id = ${t.orgId} and s.livemode = ${t.livemode} and ${sale} and ${inYear}
    union all
    select r.result -> 'extra' -> 'refund' ->> 'participant_id', 'refund', t.id, t.kind, (-t.amount)::text, ${at}
    from ledger.transactions r join ledger.transactions t
      on t.org_id = r.org_id and t.livemode = r.livemode and t.kind = 'reversal' and (t.result -> 'extra' ->> 'reversed_transaction_id') = r.id
    where r.org_id = ${t.orgId} and r.livemode = ${t.livemode} and r.kind = 'refund'
      and ${reversedRefund} and ${inYear}`;
}

export function pgTaxFigures(sql: Sql): TaxFiguresReader {
  return {
    async participantsAfter(t, after, limit) {
      const rows = await sql<{ participant_id: string }[]>`
        select participant_id from ledger.participants
        where org_id = ${t.orgId} and livemode = ${t.livemode} and participant_id > ${after ?? ""}
        order by participant_id limit ${limit}`;
      return rows.map((r) => r.participant_id);
    },
    async knownParticipants(t, ids) {
      const rows = await sql<{ participant_id: string }[]>`
        select participant_id from ledger.participants
        where org_id = ${t.orgId} and livemode = ${t.livemode} and participant_id = any(${ids as string[]})`;
      return new Set(rows.map((r) => r.participant_id));
    },
    async figures(t, who, w) {
      if ("ids" in who && who.ids.length === 0) return [];
      const rows = await sql<{ participant_id: string; role: string; month: number; total: string; n: number }[]>`
        select participant_id, role, extract(month from accounted_at at time zone 'utc')::int as month, sum(amount::bigint)::text as total, count(*)::int as n
        from (${sourceRows(sql, t, who, w)}) x
        group by participant_id, role, month
        order by participant_id`;
      return figuresOf(rows);
    },
    async sources(t, participantId, w, after, limit) {
      const rows = await sql<SourceRow[]>`
        select * from (${sourceRows(sql, t, { ids: [participantId] }, w)}) x
        where transaction_id > ${after ?? ""}
        order by transaction_id limit ${limit}`;
      return rows.map(
        (r): schemas.TaxSource => ({
          transaction_id: r.transaction_id,
          kind: r.kind,
          role: r.role,
          amount_cents: Number(r.amount),
          accounted_at: r.accounted_at.toISOString(),
        }),
      );
    },
  };
}

/** Grouped rows (participant, role, month) as one figures object per participant, in participant order. */
function figuresOf(rows: readonly { participant_id: string; role: string; month: number; total: string; n: number }[]): schemas.TaxFigures[] {
  const out = new Map<string, schemas.TaxFigures>();
  for (const r of rows) {
    let f = out.get(r.participant_id);
    if (f === undefined) {
      f = { participant_id: r.participant_id, gross_cents: 0, refunds_cents: 0, transaction_count: 0, monthly_cents: Array.from({ length: 12 }, () => 0) };
      out.set(r.participant_id, f);
    }
    const total = Number(r.total);
    if (!Number.isSafeInteger(total)) throw new Error(`tax figures of ${r.participant_id} exceed exact integers`);
    if (r.role === "sale") {
      f.gross_cents += total;
      f.transaction_count += r.n;
      f.monthly_cents[r.month - 1] = (f.monthly_cents[r.month - 1] ?? 0) + total;
    } else {
      f.refunds_cents += total;
    }
  }
  return [...out.values()];
}
