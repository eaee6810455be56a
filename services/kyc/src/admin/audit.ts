/**
 * KYC decisions and personal-data views as `audit list` entries: kyc.review_actions, which the use cases write
 * with the decision itself (the sandbox's `auto_approve` included), is this service's record of its operators'
 * successes; the kit's kyc.audit_log keeps the failed attempts.
 */
import type { AuditEntry, AuditListRequest } from "@treasury/contracts";
import type { AuditSource, Sql } from "@treasury/service-kit";

interface ReviewActionEntry {
  id: string;
  at: Date;
  actor: string;
  action: string;
  org_id: string;
  livemode: boolean;
  reason: string | null;
  submission_id: string;
  participant_id: string | null;
  event_id: string | null;
  subject: string;
  from_status: string;
  to_status: string;
}

/** The CLI's words for the service's actions (`kyc.auto-approve` for `auto_approve`); undefined for all of them. */
function kycActionOf(action: string | undefined): string | undefined {
  return action?.startsWith("kyc.") ? action.slice(4).replace(/-/g, "_") : undefined;
}

async function reviewActions(sql: Sql, f: AuditListRequest): Promise<ReviewActionEntry[]> {
  const kycAction = kycActionOf(f.action);
  return sql<ReviewActionEntry[]>`
    select id::text as id, created_at as at, actor, 'kyc.' || replace(action, '_', '-') as action, org_id, livemode, reason,
           submission_id, participant_id, event_id, subject, from_status, to_status
      from kyc.review_actions
     where true
       ${f.org_id === undefined ? sql`` : sql`and org_id = ${f.org_id}`}
       ${kycAction === undefined ? sql`` : sql`and action = ${kycAction}`}
       ${f.since === undefined ? sql`` : sql`and created_at >= ${f.since}`}
       ${f.targets === undefined ? sql`` : sql`and (submission_id = any(${f.targets}::text[]) or event_id = any(${f.targets}::text[]))`}
     order by created_at desc, id desc
     limit ${f.limit}`;
}

export function reviewActionsAudit(sql: Sql): AuditSource {
  return async (f) => {
    if (f.action !== undefined && f.action !== "kyc" && !f.action.startsWith("kyc.")) return [];
    const rows = await reviewActions(sql, f);
    return rows.map(
      (r): AuditEntry => ({
        source: "kyc.review_actions",
        id: r.id,
        at: r.at,
        actor: r.actor,
        action: r.action,
        org_id: r.org_id,
        livemode: r.livemode,
        target_ids: [r.submission_id, r.participant_id, r.event_id].filter((x): x is string => typeof x === "string"),
        reason: r.reason,
        outcome: "succeeded",
        error_code: null,
        error: null,
        details: { subject: r.subject, from_status: r.from_status, to_status: r.to_status },
      }),
    );
  };
}
