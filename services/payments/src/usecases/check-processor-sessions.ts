/**
 * The backstop of live card money (a loop of its own, every PAYMENTS_RECONCILE_INTERVAL_MS, at most
 * PAYMENTS_RECONCILE_BATCH_MAX sessions a pass): a processor session (a checkout's or a wallet top-up's) that no
 * event has settled is asked about directly, once some minutes after its creation and again after its expiry (then as
 * often while the processor still reports it open). A paid one completes, an expired one fails, through the same
 * functions as the processor's events (usecases/processor-events.ts), so an event arriving as well changes nothing.
 * Without it, a webhook endpoint misconfigured or down for longer than the processor retries would leave a buyer
 * charged and the sale never recorded. Each session costs the processor two reads in its life.
 */
import { driveEach } from "@treasury/service-kit";
import type { DueCheck } from "../domain/records.ts";
import { CHECKOUT_TTL_MS, type PaymentsDeps } from "./deps.ts";
import { CheckoutSessionObject, sessionEnded, sessionPaid } from "./processor-events.ts";

/** What a check found at the processor. `paid` means a payment no event had reported: the webhook is not arriving. */
export type CheckFinding = "paid" | "expired" | "open" | "unreadable" | "failed";

async function checkOne(deps: PaymentsDeps, due: DueCheck, found: (f: CheckFinding) => void): Promise<{ status: string }> {
  if (deps.processor === undefined) return { status: "no processor credentials" };
  const parsed = CheckoutSessionObject.safeParse(await deps.processor.retrieveCheckoutSession(due.processor_session_id));
  if (!parsed.success) {
    found("unreadable");
    return { status: `processor session ${due.processor_session_id} unreadable` };
  }
  const s = parsed.data;
  // Read with the deployment's key, the session says which environment it belongs to; one that does not say matches none.
  const report = { session: s, livemode: s.livemode ?? null };
  if (s.payment_status === "paid") {
    const status = await sessionPaid(deps, report);
    found("paid");
    return { status };
  }
  if (s.status === "expired") {
    const status = await sessionEnded(deps, report, "expired");
    found("expired");
    return { status };
  }
  found("open");
  return { status: `processor session ${s.id} still ${s.status ?? "open"} (${s.payment_status ?? "unpaid"})` };
}

/** One pass over the due checks; answers what they found (a check that threw is `failed`, asked again later). */
export async function checkProcessorSessions(deps: PaymentsDeps, batchMax: number): Promise<Record<CheckFinding, number>> {
  const tally: Record<CheckFinding, number> = { paid: 0, expired: 0, open: 0, unreadable: 0, failed: 0 };
  if (deps.processor === undefined) return tally;
  // Claimed with their next check already moved on (store/processor-checks.ts).
  const due = await deps.processorChecks.claimDue({ afterMs: deps.processorCheckAfterMs, topupTtlMs: CHECKOUT_TTL_MS, limit: batchMax });
  const done = await driveEach(deps.log, { noun: "processor session", idField: "processor_check_of" }, due, (d) => checkOne(deps, d, (f) => (tally[f] += 1)));
  tally.failed = due.length - done;
  return tally;
}
