/**
 * KYC review: the queue, decisions and opening a submission's personal data. The kyc service's use cases record
 * each decision and each view in kyc.review_actions in the same transaction (which `admin audit list` reads);
 * an attempt that failed changed nothing there, so the audit log keeps it.
 */
import { schemas } from "@treasury/contracts";
import { pgKycStore } from "../../services/kyc/src/store/verifications.ts";
import { listVerifications, reviewSubmission, showSubmission } from "../../services/kyc/src/usecases/review.ts";
import type { AuditSpec, Commands } from "./command.ts";
import { need, piiSealer, type Q } from "./context.ts";

async function submissionScope(q: Q, id: string | undefined): Promise<{ org_id: string; livemode: boolean; participant_id: string | null } | undefined> {
  if (id === undefined) return undefined;
  const [exists] = await q<{ t: string | null }[]>`select to_regclass('kyc.submissions')::text as t`;
  if (!exists?.t) return undefined;
  const [row] = await q<{ org_id: string; livemode: boolean; participant_id: string | null }[]>`
    select org_id, livemode, participant_id from kyc.submissions where id = ${id}`;
  return row;
}

function reviewAudit(action: string): AuditSpec {
  return {
    action: `kyc.${action}`,
    atomic: false,
    successKeptIn: "kyc.review_actions",
    target: async (ctx, q) => {
      const id = ctx.values.id;
      const s = await submissionScope(q, id);
      return {
        orgId: s?.org_id ?? null,
        livemode: s?.livemode ?? null,
        targetIds: [id, s?.participant_id ?? undefined].filter((x): x is string => x !== undefined),
      };
    },
  };
}

function decision(action: "approve" | "reject" | "suspend"): Commands[string] {
  return {
    usage: `kyc ${action} --id kycs_… ${action === "approve" ? "[--reason TEXT]" : "--reason TEXT"} [--actor NAME]   → the decision`,
    audit: reviewAudit(action),
    run: (ctx) => reviewSubmission(pgKycStore(ctx.sql), { submissionId: need(ctx.values.id, "--id"), action, actor: ctx.actor, reason: ctx.reason }),
  };
}

export const kycCommands: Commands = {
  "kyc list": {
    usage:
      "kyc list --status pending|under_review|approved|rejected|suspended [--org ID] [--subject business|creator] [--limit N]   → {verifications} (no personal data)",
    async run(ctx) {
      const status = schemas.KycStatus.safeParse(ctx.values.status);
      if (!status.success) throw new Error(`--status must be one of ${schemas.KYC_STATUSES.join(", ")}`);
      const subject = ctx.values.subject;
      if (subject !== undefined && subject !== "business" && subject !== "creator") throw new Error("--subject must be business or creator");
      const limit = ctx.values.limit === undefined ? undefined : Number(ctx.values.limit);
      return { verifications: await listVerifications(pgKycStore(ctx.sql), { status: status.data, orgId: ctx.values.org, subject, limit }) };
    },
  },
  "kyc approve": decision("approve"),
  "kyc reject": decision("reject"),
  "kyc suspend": decision("suspend"),
  "kyc show": {
    usage: "kyc show --id kycs_… --reason TEXT [--actor NAME]   → the submission with its personal data, history and review trail (the view is recorded)",
    audit: reviewAudit("view"),
    run: (ctx) => showSubmission(pgKycStore(ctx.sql), piiSealer(), { submissionId: need(ctx.values.id, "--id"), actor: ctx.actor, reason: ctx.reason }),
  },
};
