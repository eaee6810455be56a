/** SQL of chain checkpoints and chain audits (migrations/0002_chain_checkpoints.sql; the ChainStore port). */
import type { Tenant } from "@treasury/contracts";
import type { AuditRow, ChainStore, CheckpointRow } from "../usecases/ports.ts";
import type { Sql } from "./db.ts";

async function newestCheckpoint(q: Sql, t: Tenant): Promise<CheckpointRow | undefined> {
  const [row] = await q<(Omit<CheckpointRow, "sequence"> & { sequence: string })[]>`
    select sequence, entry_hash, signature_kid, signature_jws from receipts.chain_checkpoints
     where org_id = ${t.orgId} and livemode = ${t.livemode} order by sequence desc limit 1`;
  return row === undefined ? undefined : { ...row, sequence: Number(row.sequence) };
}

async function insertCheckpoint(q: Sql, t: Tenant, c: CheckpointRow): Promise<void> {
  await q`
    insert into receipts.chain_checkpoints (org_id, livemode, sequence, entry_hash, signature_kid, signature_jws)
    values (${t.orgId}, ${t.livemode}, ${c.sequence}, ${c.entry_hash}, ${c.signature_kid}, ${c.signature_jws})
    on conflict (org_id, livemode, sequence) do nothing`;
}

async function findAudit(q: Sql, t: Tenant): Promise<AuditRow | undefined> {
  const [row] = await q<(Omit<AuditRow, "through_sequence"> & { through_sequence: string })[]>`
    select audited_at, through_sequence, problems from receipts.chain_audits where org_id = ${t.orgId} and livemode = ${t.livemode}`;
  return row === undefined ? undefined : { ...row, through_sequence: Number(row.through_sequence) };
}

async function recordAudit(q: Sql, t: Tenant, a: AuditRow): Promise<void> {
  await q`
    insert into receipts.chain_audits (org_id, livemode, audited_at, through_sequence, problems)
    values (${t.orgId}, ${t.livemode}, ${a.audited_at}, ${a.through_sequence}, ${q.json(a.problems)})
    on conflict (org_id, livemode) do update
      set audited_at = excluded.audited_at, through_sequence = excluded.through_sequence, problems = excluded.problems`;
}

async function listChains(q: Sql): Promise<Tenant[]> {
  const rows = await q<{ org_id: string; livemode: boolean }[]>`select org_id, livemode from receipts.chain_heads order by org_id, livemode`;
  return rows.map((r) => ({ orgId: r.org_id, livemode: r.livemode }));
}

async function countBrokenChains(q: Sql): Promise<number> {
  const [row] = await q<{ n: string }[]>`select count(*)::text as n from receipts.chain_audits where jsonb_array_length(problems) > 0`;
  return Number(row?.n ?? 0);
}

export function pgChainStore(sql: Sql): ChainStore {
  return {
    newestCheckpoint: (t) => newestCheckpoint(sql, t),
    insertCheckpoint: (t, c) => insertCheckpoint(sql, t, c),
    findAudit: (t) => findAudit(sql, t),
    recordAudit: (t, a) => recordAudit(sql, t, a),
    listChains: () => listChains(sql),
    countBroken: () => countBrokenChains(sql),
  };
}
