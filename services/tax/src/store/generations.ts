/**
 * SQL of generation jobs (usecases/generations.ts). A page's progress is written by the documents store in the
 * page's own transaction (store/documents.ts, `advanceTx`), so the cursor never runs ahead of the documents.
 */
import type { Tenant } from "@treasury/contracts";
import type { Sql, Tx } from "@treasury/service-kit";
import type { Generation } from "../domain/generations.ts";
import type { GenerationStore, PageProgress } from "../usecases/ports.ts";

interface Row {
  id: string;
  org_id: string;
  livemode: boolean;
  tax_year: number;
  status: Generation["status"];
  after_participant: string | null;
  participants_read: number;
  created: number;
  updated: number;
  unchanged: number;
  filed: number;
  removed: number;
  last_error: string | null;
  created_at: Date;
  updated_at: Date;
  finished_at: Date | null;
}

function generationOf(r: Row): Generation {
  return {
    id: r.id,
    tenant: { orgId: r.org_id, livemode: r.livemode },
    taxYear: r.tax_year,
    status: r.status,
    after: r.after_participant,
    participantsRead: r.participants_read,
    created: r.created,
    updated: r.updated,
    unchanged: r.unchanged,
    filed: r.filed,
    removed: r.removed,
    lastError: r.last_error,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    finishedAt: r.finished_at,
  };
}

/** The page's counts added to its job, the cursor moved, the lease renewed; the last page ends the job. */
export async function advanceTx(tx: Tx, p: PageProgress, counts: { created: number; updated: number; unchanged: number; filed: number; removed: number }) {
  const done = p.after === null;
  await tx`
    update tax.generations set
      after_participant = coalesce(${p.after}, after_participant), participants_read = participants_read + ${p.participantsRead},
      created = created + ${counts.created}, updated = updated + ${counts.updated}, unchanged = unchanged + ${counts.unchanged},
      filed = filed + ${counts.filed}, removed = removed + ${counts.removed},
      status = ${done ? "succeeded" : "running"}, finished_at = ${done ? tx`now()` : null},
      lease_until = ${done ? null : tx`now() + make_interval(secs => ${p.leaseMs / 1000})`}, last_error = null, updated_at = now()
    where id = ${p.generationId} and status = 'running'`;
}

export function pgGenerationStore(sql: Sql): GenerationStore {
  return {
    async start(t: Tenant, taxYear: number, id: string) {
      const [row] = await sql<Row[]>`
        insert into tax.generations (id, org_id, livemode, tax_year, status)
        values (${id}, ${t.orgId}, ${t.livemode}, ${taxYear}, 'running')
        on conflict (org_id, livemode, tax_year) where status = 'running' do nothing
        returning *`;
      if (row !== undefined) return { generation: generationOf(row), started: true };
      const [running] = await sql<Row[]>`select * from tax.generations
        where org_id = ${t.orgId} and livemode = ${t.livemode} and tax_year = ${taxYear} and status = 'running'`;
      // It ended between the two statements: start another (its pages see everything posted before this call).
      if (running === undefined) return this.start(t, taxYear, id);
      return { generation: generationOf(running), started: false };
    },
    async get(t, id) {
      const [row] = await sql<Row[]>`select * from tax.generations where id = ${id} and org_id = ${t.orgId} and livemode = ${t.livemode}`;
      return row === undefined ? undefined : generationOf(row);
    },
    async claim(leaseMs) {
      const [row] = await sql<Row[]>`
        update tax.generations set lease_until = now() + make_interval(secs => ${leaseMs / 1000}), updated_at = now()
        where id = (
          select id from tax.generations where status = 'running' and (lease_until is null or lease_until < now())
          order by created_at, id limit 1 for update skip locked)
        returning *`;
      return row === undefined ? undefined : generationOf(row);
    },
    async release(id, error, retryMs) {
      await sql`update tax.generations set lease_until = now() + make_interval(secs => ${retryMs / 1000}), last_error = ${error}, updated_at = now()
        where id = ${id} and status = 'running'`;
    },
  };
}
