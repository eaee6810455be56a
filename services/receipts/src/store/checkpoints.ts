/** SQL of chain checkpoints and chain audits (migrations/0002_chain_checkpoints.sql). */
import type { Q, Scope } from "./db.ts";

export interface CheckpointRow {
  sequence: number;
  entry_hash: string;
  signature_kid: string;
  signature_jws: string;
}

export interface AuditRow {
  audited_at: Date;
  through_sequence: number;
  problems: string[];
}

/** The newest checkpoint of a chain, if any. */
export async function newestCheckpoint(q: Q, s: Scope): Promise<CheckpointRow | undefined> {
  const [row] = await q<(Omit<CheckpointRow, "sequence"> & { sequence: string })[]>`
    select sequence, entry_hash, signature_kid, signature_jws from receipts.chain_checkpoints
     where org_id = ${s.orgId} and livemode = ${s.livemode} order by sequence desc limit 1`;
  return row === undefined ? undefined : { ...row, sequence: Number(row.sequence) };
}

/** Records a checkpoint; a concurrent verification that walked as far has recorded the same one: nothing to do. */
export async function insertCheckpoint(q: Q, s: Scope, c: CheckpointRow): Promise<void> {
  await q`
    insert into receipts.chain_checkpoints (org_id, livemode, sequence, entry_hash, signature_kid, signature_jws)
    values (${s.orgId}, ${s.livemode}, ${c.sequence}, ${c.entry_hash}, ${c.signature_kid}, ${c.signature_jws})
    on conflict (org_id, livemode, sequence) do nothing`;
}

export async function findAudit(q: Q, s: Scope): Promise<AuditRow | undefined> {
  const [row] = await q<(Omit<AuditRow, "through_sequence"> & { through_sequence: string })[]>`
    select audited_at, through_sequence, problems from receipts.chain_audits where org_id = ${s.orgId} and livemode = ${s.livemode}`;
  return row === undefined ? undefined : { ...row, through_sequence: Number(row.through_sequence) };
}

export async function recordAudit(q: Q, s: Scope, a: AuditRow): Promise<void> {
  await q`
    insert into receipts.chain_audits (org_id, livemode, audited_at, through_sequence, problems)
    values (${s.orgId}, ${s.livemode}, ${a.audited_at}, ${a.through_sequence}, ${q.json(a.problems)})
    on conflict (org_id, livemode) do update
      set audited_at = excluded.audited_at, through_sequence = excluded.through_sequence, problems = excluded.problems`;
}

/** Every chain (org and environment) that has a proof. */
export async function listChains(q: Q): Promise<Scope[]> {
  const rows = await q<{ org_id: string; livemode: boolean }[]>`select org_id, livemode from receipts.chain_heads order by org_id, livemode`;
  return rows.map((r) => ({ orgId: r.org_id, livemode: r.livemode }));
}

/** Chains whose stored audit found problems. */
export async function countBrokenChains(q: Q): Promise<number> {
  const [row] = await q<{ n: string }[]>`select count(*)::text as n from receipts.chain_audits where jsonb_array_length(problems) > 0`;
  return Number(row?.n ?? 0);
}
