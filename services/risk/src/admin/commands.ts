/**
 * The operators' review of risk evaluations (`npm run admin -- risk list|approve|deny`): the queue, and a decision
 * on one evaluation under review, which writes `risk.decided` (usecases/review.ts). A decision opens its own
 * transaction, so its audit row in risk.audit_log is written once its outcome is known, failures included.
 */
import { DomainError, type AdminRequest } from "@treasury/contracts";
import { environmentFlag, flag, requiredFlag, type AdminAudit, type Service } from "@treasury/service-kit";
import { presentEvaluation, type ReviewDecision, type ReviewStatus } from "../domain/evaluations.ts";
import type { RiskDeps, ReviewFilter } from "../usecases/ports.ts";
import { decideReview, REVIEW_LIST_LIMIT_DEFAULT, REVIEW_LIST_LIMIT_MAX, reviewQueue } from "../usecases/review.ts";

const STATUSES: readonly ReviewStatus[] = ["pending", "approved", "denied"];

function listInput(request: AdminRequest): ReviewFilter {
  const status = flag(request, "status") ?? "pending";
  if (!STATUSES.includes(status as ReviewStatus)) throw new DomainError("validation_error", `--status must be one of ${STATUSES.join(", ")}`);
  const rawLimit = flag(request, "limit");
  const limit = rawLimit === undefined ? REVIEW_LIST_LIMIT_DEFAULT : Number(rawLimit);
  if (!Number.isInteger(limit) || limit < 1 || limit > REVIEW_LIST_LIMIT_MAX) {
    throw new DomainError("validation_error", `--limit must be an integer from 1 to ${REVIEW_LIST_LIMIT_MAX}`);
  }
  const livemode = flag(request, "env") === undefined ? undefined : environmentFlag(request).livemode;
  return { orgId: flag(request, "org"), livemode, status: status as ReviewStatus, limit };
}

interface DecisionInput {
  evaluationId: string;
  reason: string;
}

function decisionInput(request: AdminRequest): DecisionInput {
  const reason = request.reason?.trim() ?? "";
  if (reason === "") throw new DomainError("validation_error", "missing --reason: a risk decision says why");
  return { evaluationId: requiredFlag(request, "id"), reason };
}

function decisionAudit(deps: RiskDeps): AdminAudit<DecisionInput> {
  return {
    atomic: false,
    target: async ({ input, request }) => {
      const id = input?.evaluationId ?? flag(request, "id");
      const e = id === undefined || id === "" ? undefined : await deps.evaluations.getById(id);
      return {
        orgId: e?.tenant.orgId ?? null,
        livemode: e?.tenant.livemode ?? null,
        targetIds: [id, e?.key, e?.proposal.participantId],
        details: e === undefined ? undefined : { operation: e.proposal.operation, amount: e.proposal.amount },
      };
    },
  };
}

function registerDecision(svc: Pick<Service, "handleAdmin">, deps: RiskDeps, command: "risk approve" | "risk deny", decision: ReviewDecision): void {
  svc.handleAdmin(command, {
    decode: decisionInput,
    audit: decisionAudit(deps),
    run: async ({ input, actor }) => ({
      evaluation: presentEvaluation(await decideReview(deps, { evaluationId: input.evaluationId, decision, actor, reason: input.reason })),
    }),
  });
}

export function registerAdminCommands(svc: Pick<Service, "handleAdmin">, deps: RiskDeps): void {
  // Reading the queue changes nothing: it is not recorded.
  svc.handleAdmin("risk list", {
    decode: listInput,
    run: async ({ input }) => ({ evaluations: (await reviewQueue(deps, input)).map(presentEvaluation) }),
  });
  registerDecision(svc, deps, "risk approve", "approved");
  registerDecision(svc, deps, "risk deny", "denied");
}
