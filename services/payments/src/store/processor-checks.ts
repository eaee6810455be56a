/** When each live processor session still pending is next asked about (usecases/check-processor-sessions.ts). */
import type { DueCheck } from "../domain/records.ts";
import type { ProcessorCheckStore } from "../usecases/ports.ts";
import type { Q, Sql } from "./db.ts";

/** After this long past its expiry a session is asked about no more (asynchronous payments settle within days). */
const CHECK_DAYS_AFTER_EXPIRY = 7;

/** `after` seconds past the expiry, or past now once that has passed; none once the expiry is a week gone. */
function nextCheck(q: Q, expiresAt: ReturnType<Q>, after: number) {
  return q`case when now() > ${expiresAt} + make_interval(days => ${CHECK_DAYS_AFTER_EXPIRY}) then null
    else greatest(now(), ${expiresAt}) + make_interval(secs => ${after}) end`;
}

/**
 * Claims the pending sessions whose check is due, the longest-waiting first, at most `limit` of each kind: each
 * one's next check is moved, in the same statement, to `afterMs` past its expiry (or past now, once that has
 * passed), so replicas never ask about the same session at once and a processor that does not answer is asked
 * again at that next time, not at every pass; a week after its expiry a session is no longer asked about. A
 * top-up expires `topupTtlMs` after its creation.
 */
export async function claimDueChecks(q: Q, opts: { afterMs: number; topupTtlMs: number; limit: number }): Promise<DueCheck[]> {
  const after = opts.afterMs / 1000;
  const checkouts = await q<DueCheck[]>`
    with due as (
      select id from payments.checkout_sessions
       where status = 'pending' and processor_check_at <= now() and payment_id is not null
       order by processor_check_at limit ${opts.limit} for update skip locked)
    update payments.checkout_sessions c set processor_check_at = ${nextCheck(q, q`c.expires_at`, after)}
      from due where c.id = due.id
    returning 'checkout' as kind, c.id::text as id, c.payment_id as processor_session_id`;
  const topups = await q<DueCheck[]>`
    with due as (
      select id from payments.wallet_topups
       where status = 'pending' and processor_check_at <= now() and processor_session_id is not null
       order by processor_check_at limit ${opts.limit} for update skip locked)
    update payments.wallet_topups t
       set processor_check_at = ${nextCheck(q, q`t.created_at + make_interval(secs => ${opts.topupTtlMs / 1000})`, after)}
      from due where t.id = due.id
    returning 'topup' as kind, t.id, t.processor_session_id`;
  return [...checkouts, ...topups];
}

export function pgProcessorCheckStore(sql: Sql): ProcessorCheckStore {
  return { claimDue: (opts) => claimDueChecks(sql, opts) };
}
