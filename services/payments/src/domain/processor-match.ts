/**
 * Whether the card processor's report of a session (a signed event, or the session read back from its API) is about
 * the session we stored. A report is acted on only when it is: a test-mode payment must never credit live money, a
 * paid session of another checkout must never complete this one, and a payment in another currency or of another
 * amount is not the one this session asked for. A report that does not match is dropped, never retried: the same
 * report cannot come to match later.
 */

/** Why a report was dropped (the `reason` of `processor_events_dropped_total`). */
export type DropReason = "livemode_mismatch" | "session_mismatch" | "currency_mismatch" | "amount_mismatch";

export interface StoredSession {
  livemode: boolean;
  /** The processor's id of the session we created for it (null if it never recorded one: nothing can match it). */
  processorSessionId: string | null;
  /** ISO 4217, upper case. */
  currency: string;
  amount: number;
}

export interface ReportedSession {
  /** Null when the report does not say, or says two different things (the event and its object). */
  livemode: boolean | null;
  id: string;
  currency: string | null | undefined;
  amount: number | null | undefined;
}

/**
 * The first mismatch, or undefined when the report is about the stored session. `paid` reports also must carry the
 * stored currency and amount; an unpaid ending (expired, payment failed) moves no money and only needs to be ours.
 */
export function mismatchOf(stored: StoredSession, reported: ReportedSession, paid: boolean): DropReason | undefined {
  if (reported.livemode !== stored.livemode) return "livemode_mismatch";
  if (stored.processorSessionId === null || reported.id !== stored.processorSessionId) return "session_mismatch";
  if (!paid) return undefined;
  if ((reported.currency ?? "").toUpperCase() !== stored.currency.toUpperCase()) return "currency_mismatch";
  if (reported.amount !== stored.amount) return "amount_mismatch";
  return undefined;
}
