/**
 * What every chaos run must show at its end, whatever its faults: nothing lost, doubled or left unsettled, every
 * retried flow whole, the ledger's invariants, every public event delivered once with a good signature, no 500,
 * no refusal, no process that died by itself and no failure before the first fault.
 */
import { expect } from "vitest";
import { report, type RunResult } from "../../bench/chaos-run.ts";

/** Asserts the run came out whole; answers its printed table for the caller's own checks. */
export function expectWhole(r: RunResult): string {
  const table = report(r).join("\n");
  console.log(table);
  expect(r.unsettled, table).toEqual(Object.fromEntries(Object.keys(r.unsettled).map((k) => [k, 0])));
  expect(r.end.flows.ok, table).toBeGreaterThan(0);
  expect({ lost: r.end.lost, doubled: r.end.doubled, duplicateReferences: r.end.duplicateReferences, refusedButMoved: r.end.refusedButMoved }, table).toEqual({
    lost: 0,
    doubled: 0,
    duplicateReferences: 0,
    refusedButMoved: 0,
  });
  expect({ stillFailing: r.end.retried.stillFailing, broken: r.end.retried.broken }, table).toEqual({ stillFailing: 0, broken: 0 });
  expect(r.end.invariants.ok, table).toBe(true);
  expect(r.end.webhooks.expected, table).toBeGreaterThan(0);
  expect({ missing: r.end.webhooks.missing, unstableIds: r.end.webhooks.unstableIds, badSignatures: r.end.webhooks.badSignatures }, table).toEqual({
    missing: 0,
    unstableIds: 0,
    badSignatures: 0,
  });
  expect(r.refusals, table).toEqual([]);
  expect(r.serverErrors, table).toBe(0);
  expect(r.crashes, table).toEqual([]);
  expect(r.steady.failedAttempts, table).toBe(0);
  return table;
}
