/** RPC handlers of kyc: decode with the shared contracts → use case → named-key body; the handler picks the status. */
import { DomainError, ParticipantId, parseOrThrow, schemas, tenantOf, type AuthContext } from "@treasury/contracts";
import type { Service } from "@treasury/service-kit";
import type { Submitter } from "../usecases/deps.ts";
import type { KycDeps } from "../usecases/ports.ts";
import { getBusiness, getCreator, getCreatorStatus } from "../usecases/read.ts";
import { submitBusiness, submitCreator } from "../usecases/submit.ts";

/** Path parameter participant_id, checked like the participant ids the ledger issues. */
function participantId(params: Record<string, string>): string {
  const parsed = ParticipantId.safeParse(params["participant_id"]);
  if (!parsed.success) {
    throw new DomainError("validation_error", "Invalid path parameter participant_id", {
      details: [{ path: "params.participant_id", message: "1–100 characters of A-Z a-z 0-9 _ . : -" }],
    });
  }
  return parsed.data;
}

/** Who submitted, for the submission's audit trail. */
function submitterOf(auth: AuthContext): Submitter {
  return { requestId: auth.request_id, keyId: auth.key_id };
}

export function registerHandlers(svc: Pick<Service, "handle">, deps: KycDeps): void {
  svc.handle("getBusinessVerification", async (_req, ctx) => ({ body: await getBusiness(deps, tenantOf(ctx.auth)) }));
  // Bodies are parsed again here: the gateway validates too, but a direct RPC caller may not have.
  svc.handle("submitBusinessVerification", async (req, ctx) => {
    const verification = await submitBusiness(deps, tenantOf(ctx.auth), submitterOf(ctx.auth), parseOrThrow(schemas.SubmitBusinessBody, req.body));
    return { status: 201, body: { business_kyb: verification } };
  });
  svc.handle("getCreatorVerification", async (req, ctx) => ({ body: await getCreator(deps, tenantOf(ctx.auth), participantId(req.params)) }));
  svc.handle("submitCreatorVerification", async (req, ctx) => {
    const body = parseOrThrow(schemas.SubmitCreatorBody, req.body);
    const verification = await submitCreator(deps, tenantOf(ctx.auth), submitterOf(ctx.auth), participantId(req.params), body);
    return { status: 201, body: { creator_kyc: verification } };
  });
  // Internal (no public route): payout eligibility reads a creator's status and tax certification.
  svc.handle(schemas.CREATOR_KYC_STATUS_OPERATION, async (req, ctx) => ({
    body: await getCreatorStatus(deps, tenantOf(ctx.auth), participantId(req.params)),
  }));
}
