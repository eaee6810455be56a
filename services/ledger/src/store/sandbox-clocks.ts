/**
 * The sandbox test clocks the ledger owns: the kit table ledger.sandbox_clocks (seconds each org's sandbox runs
 * ahead of real time) and the `sandbox_clock.advanced` event every other service follows, written together.
 */
import { SANDBOX_CLOCK_ADVANCED } from "@treasury/contracts";
import { advanceSandboxClock, withTx, writeOutbox } from "@treasury/service-kit";
import type { SandboxClockStore } from "../usecases/ports.ts";
import type { Q, Sql } from "./db.ts";

const SCHEMA = "ledger";

async function storedAdvance(q: Q, orgId: string, lock: boolean): Promise<number> {
  const [row] = await q<{ advanced_seconds: string }[]>`
    select advanced_seconds from ledger.sandbox_clocks where org_id = ${orgId} ${lock ? q`for update` : q``}`;
  return Number(row?.advanced_seconds ?? 0);
}

export function pgSandboxClockStore(sql: Sql): SandboxClockStore {
  return {
    advancedSeconds: (orgId) => storedAdvance(sql, orgId, false),
    advance: (orgId, next, data) =>
      withTx(sql, async (tx) => {
        // An org's first advance has no row to lock: two first advances race on the insert, and the kit's upsert
        // keeps the larger (the clock never moves back), each writing its own event.
        const current = await storedAdvance(tx, orgId, true);
        const seconds = next(current);
        if (seconds <= current) return current;
        const stored = await advanceSandboxClock(tx, SCHEMA, orgId, seconds);
        // The ledger's sandbox is the clock's only environment: the event is a sandbox event of the org.
        await writeOutbox(tx, SCHEMA, { type: SANDBOX_CLOCK_ADVANCED, org_id: orgId, livemode: false, data: data(stored) });
        return stored;
      }),
  };
}
