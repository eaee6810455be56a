/** When each live processor session still pending is next asked about (usecases/check-processor-sessions.ts). */
import type { Q } from "./db.ts";

export interface DueCheck {
  kind: "checkout" | "topup";
  /** The checkout session's or the top-up's id. */
  id: string;
  processor_session_id: string;
  /** When the processor's session expires (a top-up's: its creation plus the checkout lifetime). */
  expires_at: Date;
}

/** Pending sessions whose check is due, the longest-waiting first, at most `limit` of each kind. */
export async function dueProcessorChecks(q: Q, topupTtlMs: number, limit: number): Promise<DueCheck[]> {
  return q<DueCheck[]>`
    (select 'checkout' as kind, id::text as id, payment_id as processor_session_id, expires_at
       from payments.checkout_sessions
      where status = 'pending' and processor_check_at <= now() and payment_id is not null
      order by processor_check_at limit ${limit})
    union all
    (select 'topup', id, processor_session_id, created_at + make_interval(secs => ${topupTtlMs / 1000})
       from payments.wallet_topups
      where status = 'pending' and processor_check_at <= now() and processor_session_id is not null
      order by processor_check_at limit ${limit})`;
}

export async function scheduleProcessorCheck(q: Q, check: Pick<DueCheck, "kind" | "id">, at: Date): Promise<void> {
  if (check.kind === "checkout") await q`update payments.checkout_sessions set processor_check_at = ${at} where id = ${check.id} and status = 'pending'`;
  else await q`update payments.wallet_topups set processor_check_at = ${at} where id = ${check.id} and status = 'pending'`;
}
