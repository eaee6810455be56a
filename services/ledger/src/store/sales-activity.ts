/**
 * SQL of the sales figures risk reads (usecases/sales-activity.ts). Sales are found through their transactions'
 * listing index (org, environment, time), so a read costs the window's transactions, not the org's whole history.
 * Times are the database's: a sale's row is stamped with real time.
 */
import { parseCents } from "@treasury/contracts";
import type { Sql } from "@treasury/service-kit";
import type { SalesActivityReader } from "../usecases/sales-activity.ts";

export function pgSalesActivity(sql: Sql): SalesActivityReader {
  return {
    async salesActivity(tenant, participantId, windowDays) {
      const [row] = await sql<{ sales_count: number; gross: string; refunded: string }[]>`
        select count(*)::int as sales_count, coalesce(sum(s.gross), 0)::text as gross, coalesce(sum(s.refunded_amount), 0)::text as refunded
        from ledger.transactions t
        join ledger.sales s on s.transaction_id = t.id and s.org_id = t.org_id and s.livemode = t.livemode
        where t.org_id = ${tenant.orgId} and t.livemode = ${tenant.livemode}
          and t.created_at >= date_trunc('day', now() at time zone 'utc') at time zone 'utc' - make_interval(days => ${windowDays})
          and (${participantId ?? null}::text is null or s.participant_id = ${participantId ?? null})`;
      return { sales_count: row?.sales_count ?? 0, gross_cents: parseCents(row?.gross ?? "0"), refunded_cents: parseCents(row?.refunded ?? "0") };
    },
  };
}
