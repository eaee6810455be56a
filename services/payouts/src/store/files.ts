/** SQL of ACH files: claiming live payouts into a file, and the files' delivery. */
import { withTx, type OutboxRowValues } from "@treasury/service-kit";
import type postgres from "postgres";
import type { AchFileRow, NewAchFile, PayoutRow } from "../domain/records.ts";
import type { AchFileStore } from "../usecases/ports.ts";
import type { Q, Sql, Tx } from "./db.ts";
import { claimUnfiled } from "./payouts.ts";

/** One cut at a time across replicas: file id modifiers are counted per day. */
async function lockCuts(tx: Tx): Promise<void> {
  await tx`select pg_advisory_xact_lock(hashtext('payouts.ach_cut'))`;
}

/** The next free file id modifier (A–Z, then 0–9) of a creation day; undefined when all 36 are used. */
async function nextModifier(tx: Tx, creationDate: string): Promise<string | undefined> {
  const used = new Set((await tx<{ m: string }[]>`select file_id_modifier as m from payouts.ach_files where creation_date = ${creationDate}`).map((r) => r.m));
  return [..."ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"].find((m) => !used.has(m));
}

async function nextTraceSequences(tx: Tx, n: number): Promise<number[]> {
  const rows = await tx<{ s: string }[]>`select nextval('payouts.trace_seq')::text as s from generate_series(1, ${n})`;
  return rows.map((r) => Number(r.s));
}

async function insertFile(tx: Tx, f: NewAchFile): Promise<AchFileRow> {
  const [r] = await tx<AchFileRow[]>`
    insert into payouts.ach_files (name, creation_date, file_id_modifier, effective_date, entry_count, total_credit_cents, entry_hash, sealed_content, sealed_key_id)
    values (${f.name}, ${f.creation_date}, ${f.file_id_modifier}, ${f.effective_date}, ${f.entry_count}, ${f.total_credit_cents}, ${f.entry_hash}, ${f.sealed_content}, ${f.sealed_key_id})
    returning *`;
  if (r === undefined) throw new Error("ach file insert returned no row");
  return r;
}

/** pending → processing for every payout of the file, with its trace number, and each one's event. */
async function markFiled(tx: Tx, fileId: string, traces: ReadonlyMap<string, string>, events: readonly OutboxRowValues[]): Promise<PayoutRow["id"][]> {
  const ids = [...traces.keys()];
  const traceList = ids.map((id) => traces.get(id) ?? "");
  const moved = await tx<{ id: string }[]>`
    update payouts.payouts p
       set status = 'processing', ach_file_id = ${fileId}, trace_number = t.trace, bank_transfer_status = 'submitted',
           processing_at = now(), updated_at = now()
      from unnest(${ids}::text[], ${traceList}::text[]) as t(id, trace)
     where p.id = t.id and p.status = 'pending'
     returning p.id`;
  if (moved.length !== ids.length) throw new Error(`filed ${moved.length} of ${ids.length} claimed payouts`);
  await tx`
    insert into payouts.outbox (id, org_id, livemode, type, subject, payload, headers)
    select e.id, e.org_id, e.livemode, e.type, e.subject, e.payload, e.headers
      from jsonb_to_recordset(${tx.json(events.map((e, n) => ({ ...e, n })) as unknown as postgres.JSONValue)})
           as e(id text, org_id text, livemode boolean, type text, subject text, payload jsonb, headers jsonb, n int)
     order by e.n`;
  return moved.map((r) => r.id);
}

async function undeliveredFiles(q: Q, limit: number): Promise<AchFileRow[]> {
  return q<AchFileRow[]>`select * from payouts.ach_files where delivered_at is null order by id limit ${limit}`;
}

async function markDelivered(q: Q, id: string, location: string): Promise<void> {
  await q`update payouts.ach_files set delivered_at = now(), location = ${location} where id = ${id} and delivered_at is null`;
}

export function pgAchFileStore(sql: Sql): AchFileStore {
  return {
    cut: (fn) =>
      withTx(sql, async (tx) => {
        await lockCuts(tx);
        return fn({
          claimUnfiled: (limit) => claimUnfiled(tx, limit),
          nextModifier: (creationDate) => nextModifier(tx, creationDate),
          nextTraceSequences: (n) => nextTraceSequences(tx, n),
          insertFile: (f) => insertFile(tx, f),
          markFiled: (fileId, traces, events) => markFiled(tx, fileId, traces, events),
        });
      }),
    undelivered: (limit) => undeliveredFiles(sql, limit),
    markDelivered: (id, location) => markDelivered(sql, id, location),
  };
}
