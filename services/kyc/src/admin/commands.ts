/**
 * The operators' KYC review (`npm run admin -- kyc …`): the queue, approve / reject / suspend, and opening a
 * submission's personal data. The use cases record each decision and each view in kyc.review_actions in the
 * transaction of the change (usecases/review.ts), which this service adds to its `audit list` answer; an attempt
 * that failed changed nothing there, so the kit keeps it in kyc.audit_log.
 */
import { DomainError, schemas, type AdminRequest } from "@treasury/contracts";
import { flag, requiredFlag, type AdminAudit, type Service } from "@treasury/service-kit";
import type { KycStatus, ReviewAction, Subject } from "../domain/states.ts";
import type { KycDeps } from "../usecases/ports.ts";
import { listVerifications, reviewSubmission, showSubmission } from "../usecases/review.ts";
import { reviewActionsAudit } from "./audit.ts";

interface SubmissionInput {
  submissionId: string;
}

function submissionInput(request: AdminRequest): SubmissionInput {
  return { submissionId: requiredFlag(request, "id") };
}

/**
 * A failed attempt's row: the submission's org and environment when it exists, its id and participant. `action`
 * names it as kyc.review_actions names the act (a `kyc show` is a `view`), so one filter finds both records.
 */
function reviewAudit(deps: KycDeps, action: string): AdminAudit<SubmissionInput> {
  return {
    action: `kyc.${action}`,
    atomic: false,
    successKeptIn: "kyc.review_actions",
    target: async ({ input, request }) => {
      const id = input?.submissionId ?? flag(request, "id");
      const s = id === undefined || id === "" ? undefined : await deps.store.getSubmission(id);
      return { orgId: s?.org_id ?? null, livemode: s?.livemode ?? null, targetIds: [id, s?.participant_id] };
    },
  };
}

function registerDecision(svc: Pick<Service, "handleAdmin">, deps: KycDeps, action: ReviewAction): void {
  svc.handleAdmin(`kyc ${action}`, {
    decode: submissionInput,
    audit: reviewAudit(deps, action),
    run: async ({ input, actor, reason }) => ({ ...(await reviewSubmission(deps.store, { submissionId: input.submissionId, action, actor, reason })) }),
  });
}

interface ListInput {
  status: KycStatus;
  orgId: string | undefined;
  subject: Subject | undefined;
  limit: number | undefined;
}

function listInput(request: AdminRequest): ListInput {
  const status = schemas.KycStatus.safeParse(flag(request, "status"));
  if (!status.success) throw new DomainError("validation_error", `--status must be one of ${schemas.KYC_STATUSES.join(", ")}`);
  const subject = flag(request, "subject");
  if (subject !== undefined && subject !== "business" && subject !== "creator") {
    throw new DomainError("validation_error", "--subject must be business or creator");
  }
  const limit = flag(request, "limit");
  return { status: status.data, orgId: flag(request, "org"), subject, limit: limit === undefined ? undefined : Number(limit) };
}

export function registerAdminCommands(svc: Pick<Service, "handleAdmin" | "adminAuditSource" | "sql">, deps: KycDeps): void {
  // Reading the queue changes nothing and shows no personal data: it is not recorded.
  svc.handleAdmin("kyc list", {
    decode: listInput,
    run: async ({ input }) => ({ verifications: await listVerifications(deps.store, input) }),
  });
  for (const action of ["approve", "reject", "suspend"] as const) registerDecision(svc, deps, action);
  svc.handleAdmin("kyc show", {
    decode: submissionInput,
    audit: reviewAudit(deps, "view"),
    run: async ({ input, actor, reason }) => {
      // The service's own key ring opens the data: the operator's machine never holds it.
      if (deps.sealer === undefined) {
        throw new DomainError("service_unavailable", "Personal data cannot be opened: the kyc service has no encryption keys configured (PII_KEYS)");
      }
      return showSubmission(deps.store, deps.sealer, { submissionId: input.submissionId, actor, reason });
    },
  });
  svc.adminAuditSource(reviewActionsAudit(svc.sql));
}
