/**
 * A processor report (an event, or what the processor answered when asked) that does not match what it names is
 * dropped: counted in `processor_events_dropped_total{reason}`, logged with ids only (reports carry buyers'
 * details; none are logged), and answered as the event's outcome. It is never retried: the same report cannot
 * come to match later.
 */
import type { DropReason } from "../domain/processor-match.ts";
import type { PaymentsDeps } from "./deps.ts";

export function dropReport(deps: PaymentsDeps, reason: DropReason, ids: Record<string, string | boolean | null>, what: string): string {
  deps.processorEventDropped?.(reason);
  deps.log.error({ reason, ...ids }, "a processor report that does not match what it names was dropped; no money moved");
  return `dropped (${reason}): ${what}`;
}
