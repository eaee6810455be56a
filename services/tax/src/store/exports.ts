/** SQL of export jobs and their sealed parts (usecases/exports.ts). */
import type { schemas, Tenant } from "@treasury/contracts";
import { withTx, type Sql, type Tx } from "@treasury/service-kit";
import type { TaxExport } from "../domain/exports.ts";
import type { ExportStore } from "../usecases/ports.ts";

interface Row {
  id: string;
  org_id: string;
  livemode: boolean;
  tax_year: number;
  format: schemas.ExportFormat;
  status: TaxExport["status"];
  parts: number;
  bytes: string;
  last_error: string | null;
  created_at: Date;
  finished_at: Date | null;
}

function exportOf(r: Row): TaxExport {
  return {
    id: r.id,
    tenant: { orgId: r.org_id, livemode: r.livemode },
    taxYear: r.tax_year,
    format: r.format,
    status: r.status,
    parts: r.parts,
    bytes: Number(r.bytes),
    lastError: r.last_error,
    createdAt: r.created_at,
    finishedAt: r.finished_at,
  };
}

const lease = (q: Sql | Tx, ms: number) => q`now() + make_interval(secs => ${ms / 1000})`;

export function pgExportStore(sql: Sql): ExportStore {
  return {
    async start(t: Tenant, taxYear, format, id) {
      const [row] = await sql<Row[]>`insert into tax.exports (id, org_id, livemode, tax_year, format, status)
        values (${id}, ${t.orgId}, ${t.livemode}, ${taxYear}, ${format}, 'running') returning *`;
      if (row === undefined) throw new Error(`export ${id} was not recorded`);
      return exportOf(row);
    },
    async get(t, id) {
      const [row] = await sql<Row[]>`select * from tax.exports where id = ${id} and org_id = ${t.orgId} and livemode = ${t.livemode}`;
      return row === undefined ? undefined : exportOf(row);
    },
    async claim(leaseMs) {
      // A job taken up again starts over: its parts so far are dropped with the claim.
      return withTx(sql, async (tx) => {
        const [row] = await tx<Row[]>`
          update tax.exports set lease_until = ${lease(tx, leaseMs)}, parts = 0, bytes = 0
          where id = (select id from tax.exports where status = 'running' and (lease_until is null or lease_until < now())
            order by created_at, id limit 1 for update skip locked)
          returning *`;
        if (row !== undefined) await tx`delete from tax.export_parts where export_id = ${row.id}`;
        return row === undefined ? undefined : exportOf(row);
      });
    },
    async addPart(id, part, sealed, bytes, leaseMs) {
      await withTx(sql, async (tx) => {
        await tx`insert into tax.export_parts (export_id, part, content_sealed, bytes) values (${id}, ${part}, ${sealed}, ${bytes})`;
        await tx`update tax.exports set parts = ${part}, bytes = bytes + ${bytes}, lease_until = ${lease(tx, leaseMs)} where id = ${id}`;
      });
    },
    async finish(id) {
      await sql`update tax.exports set status = 'succeeded', lease_until = null, last_error = null, finished_at = now() where id = ${id} and status = 'running'`;
    },
    async release(id, error, retryMs) {
      await sql`update tax.exports set lease_until = ${lease(sql, retryMs)}, last_error = ${error} where id = ${id} and status = 'running'`;
    },
    async part(t, id, part) {
      const [row] = await sql<{ content_sealed: string }[]>`
        select p.content_sealed from tax.export_parts p join tax.exports e on e.id = p.export_id
        where e.id = ${id} and e.org_id = ${t.orgId} and e.livemode = ${t.livemode} and p.part = ${part}`;
      return row?.content_sealed;
    },
  };
}
