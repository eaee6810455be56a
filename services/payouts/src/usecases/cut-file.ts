/**
 * Cutting an ACH file: the live payouts waiting for one (never a sandbox payout: the query, the rail column and
 * a table constraint each exclude them) become entries of one NACHA file. In one transaction the file is
 * recorded (its text sealed: it holds account numbers), every payout in it moves to `processing` with its trace
 * number, and `payout.processing` is written for each. The file is then delivered to the drop directory;
 * a file recorded but not delivered (a crash in between) is delivered by the next cut or reconciler pass,
 * with the same name and bytes. No money moves here: it left the wallets when each payout was requested.
 */
import { DomainError } from "@treasury/contracts";
import { outboxRowValues, type OutboxRowValues } from "@treasury/service-kit";
import { FILE_TOTAL_MAX_CENTS, type NachaCredit } from "../domain/nacha.ts";
import type { AchFileRow, PayoutRow } from "../domain/records.ts";
import { achFileAad, payoutDestinationAad, requireSealer, type PayoutsDeps, type SealedBankDetails } from "./deps.ts";
import type { AchCut, BankDetailsSealer, BankRail } from "./ports.ts";
import { presentPayout } from "./present.ts";

export interface CutResult {
  file: {
    id: string;
    name: string;
    location: string | null;
    entry_count: number;
    total_credit_cents: number;
    entry_hash: string;
    effective_date: string;
  } | null;
  payout_ids: string[];
}

const DELIVERY_BATCH_MAX = 20;

function requireRail(deps: PayoutsDeps): BankRail {
  if (deps.rail === undefined) {
    throw new DomainError("rail_not_enabled", "The ACH rail is not configured", {
      hint: "Set PAYOUTS_ACH_DIR and the PAYOUTS_ACH_* origin settings of the payouts service",
    });
  }
  return deps.rail;
}

/** Keeps the oldest payouts whose running total fits a file's 12-digit total. */
function fitting(rows: readonly PayoutRow[]): PayoutRow[] {
  const out: PayoutRow[] = [];
  let total = 0;
  for (const r of rows) {
    if (total + r.net_amount > FILE_TOTAL_MAX_CENTS) break;
    total += r.net_amount;
    out.push(r);
  }
  return out;
}

export async function cutFile(deps: PayoutsDeps): Promise<CutResult> {
  const rail = requireRail(deps);
  const sealer = requireSealer(deps);
  await deliverPending(deps);
  const recorded = await deps.achFiles.cut((cut) => recordFile(deps, rail, sealer, cut));
  if (recorded === undefined) return { file: null, payout_ids: [] };
  const { location } = await rail.deliver(recorded.file.name, recorded.text);
  await deps.achFiles.markDelivered(recorded.file.id, location);
  deps.log.info({ ach_file: recorded.file.name, entries: recorded.ids.length }, "ACH file cut and delivered");
  return { file: summary(recorded.file, location), payout_ids: recorded.ids };
}

/** Inside the cut's transaction: the waiting payouts become one recorded file, each payout `processing`. */
async function recordFile(
  deps: PayoutsDeps,
  rail: BankRail,
  sealer: BankDetailsSealer,
  cut: AchCut,
): Promise<{ file: AchFileRow; text: string; ids: string[] } | undefined> {
  const rows = fitting(await cut.claimUnfiled(deps.fileEntriesMax));
  if (rows.length === 0) return undefined;
  const now = deps.now();
  const creationDate = now.toISOString().slice(0, 10);
  const modifier = await cut.nextModifier(creationDate);
  if (modifier === undefined) throw new Error(`all 36 file id modifiers of ${creationDate} are used; the next file is cut tomorrow`);
  const credits = creditsOf(sealer, rows, await cut.nextTraceSequences(rows.length));
  const name = rail.fileName(now, modifier);
  const effectiveDate = rail.effectiveDate(now);
  const { text, totals } = rail.render({ name, creation: now, fileIdModifier: modifier, effectiveDate, credits });
  const file = await cut.insertFile({
    name,
    creation_date: creationDate,
    file_id_modifier: modifier,
    effective_date: effectiveDate,
    entry_count: rows.length,
    total_credit_cents: totals.totalCreditCents,
    entry_hash: totals.entryHash,
    sealed_content: sealer.seal(text, achFileAad(name)),
    sealed_key_id: sealer.activeKeyId,
  });
  const traces = new Map(rows.map((r, i) => [r.id, totals.traceNumbers[i] ?? ""]));
  await cut.markFiled(file.id, traces, processingEvents(rows, traces, file.id, now));
  return { file, text, ids: rows.map((r) => r.id) };
}

/** Each payout's entry, its destination opened from what the payout kept at its request. */
function creditsOf(sealer: BankDetailsSealer, rows: readonly PayoutRow[], sequences: readonly number[]): NachaCredit[] {
  return rows.map((r, i) => {
    if (r.dest_sealed === null || r.dest_routing_number === null || r.dest_account_type === null) throw new Error(`live payout ${r.id} has no destination`);
    const dest = sealer.openJson<SealedBankDetails>(r.dest_sealed, payoutDestinationAad(r.id));
    return {
      traceSequence: sequences[i] ?? 0,
      routingNumber: r.dest_routing_number,
      accountNumber: dest.account_number,
      accountType: r.dest_account_type,
      amountCents: r.net_amount,
      individualId: r.id.slice(-15),
      individualName: dest.account_holder_name,
      addenda: r.description ?? undefined,
    };
  });
}

function processingEvents(rows: readonly PayoutRow[], traces: ReadonlyMap<string, string>, fileId: string, now: Date): OutboxRowValues[] {
  return rows.map((r) =>
    outboxRowValues({
      type: "payout.processing",
      org_id: r.org_id,
      livemode: r.livemode,
      data: presentPayout({
        ...r,
        status: "processing",
        trace_number: traces.get(r.id) ?? null,
        bank_transfer_status: "submitted",
        ach_file_id: fileId,
        processing_at: now,
        updated_at: now,
      }),
    }),
  );
}

function summary(f: AchFileRow, location: string | null): NonNullable<CutResult["file"]> {
  return {
    id: String(f.id),
    name: f.name,
    location,
    entry_count: f.entry_count,
    total_credit_cents: Number(f.total_credit_cents),
    entry_hash: f.entry_hash,
    effective_date: typeof f.effective_date === "string" ? f.effective_date : new Date(f.effective_date).toISOString().slice(0, 10),
  };
}

/** Delivers files recorded but not yet in the drop directory (a crash after the cut's commit). */
export async function deliverPending(deps: PayoutsDeps): Promise<number> {
  if (deps.rail === undefined || deps.sealer === undefined) return 0;
  let n = 0;
  for (const f of await deps.achFiles.undelivered(DELIVERY_BATCH_MAX)) {
    const text = deps.sealer.open(f.sealed_content, achFileAad(f.name));
    const { location } = await deps.rail.deliver(f.name, text);
    await deps.achFiles.markDelivered(f.id, location);
    n++;
  }
  return n;
}
