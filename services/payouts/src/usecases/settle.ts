/**
 * Settlement of live payouts: a file's credits are paid by the receivers' banks within the settlement window,
 * so on an as-of date every payout that went into a file at least `settlementDays` days before is `paid`
 * (each through transitions.ts: ledger post, then `payout.executed`). A payout the bank returns later is still
 * failed by its return (returns.ts).
 */
import type { PayoutsDeps } from "./deps.ts";
import { driveAction } from "./transitions.ts";

const SETTLE_BATCH_MAX = 200;
const DAY_MS = 86_400_000;

export interface SettleResult {
  as_of: string;
  settled: string[];
  /** Payouts whose settlement is recorded but whose ledger post did not answer: the reconciler finishes them. */
  pending: Array<{ payout_id: string; error: string }>;
}

/** `asOf` is a calendar date (YYYY-MM-DD, UTC): payouts filed on or before asOf − settlementDays are settled. */
export async function settleDue(deps: PayoutsDeps, asOf: string): Promise<SettleResult> {
  const before = new Date(Date.parse(`${asOf}T00:00:00Z`) + DAY_MS - deps.settlementDays * DAY_MS);
  const result: SettleResult = { as_of: asOf, settled: [], pending: [] };
  for (;;) {
    const due = await deps.payouts.dueForSettlement(before, SETTLE_BATCH_MAX);
    let moved = 0;
    for (const row of due) {
      const marked = await deps.payouts.markAction(row.id, "settle", ["processing"]);
      if (marked === undefined) continue;
      moved++;
      try {
        const done = await driveAction(deps, marked);
        if (done.status === "paid") result.settled.push(done.id);
      } catch (e) {
        result.pending.push({ payout_id: row.id, error: e instanceof Error ? e.message : String(e) });
      }
    }
    if (due.length < SETTLE_BATCH_MAX || moved === 0) return result;
  }
}
