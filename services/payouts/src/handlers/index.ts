/** RPC handlers of payouts: decode with the shared contracts → use case → named-key body; the handler picks the status. */
import { DomainError, ParticipantId, parseOrThrow, schemas, tenantOf } from "@treasury/contracts";
import type { Service } from "@treasury/service-kit";
import { getBankAccount, putBankAccount } from "../usecases/bank-account.ts";
import type { PayoutsDeps } from "../usecases/deps.ts";
import { checkEligibility } from "../usecases/eligibility.ts";
import { getPayoutSchedule, putPayoutSchedule } from "../usecases/payout-schedule.ts";
import { presentPayout } from "../usecases/present.ts";
import { getPayout, listPayouts } from "../usecases/read.ts";
import { statementPage } from "../pages/statement-page.ts";
import { requestPayout } from "../usecases/request-payout.ts";
import { getPayoutStatement } from "../usecases/statement.ts";

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

export function registerHandlers(svc: Pick<Service, "handle" | "handlePage">, deps: PayoutsDeps): void {
  // Bodies and queries are parsed again here: the gateway validates too, but a direct RPC caller may not have.
  svc.handle("requestPayout", async (req, ctx) => {
    const payout = await requestPayout(deps, tenantOf(ctx.auth), parseOrThrow(schemas.CreatePayoutBody, req.body));
    return { status: 201, body: { payout: presentPayout(payout) } };
  });
  svc.handle("getPayout", async (req, ctx) => ({ body: await getPayout(deps, tenantOf(ctx.auth), req.params["payout_id"] ?? "") }));
  svc.handle("listPayouts", async (req, ctx) => ({
    body: await listPayouts(deps, tenantOf(ctx.auth), parseOrThrow(schemas.ListPayoutsQuery, req.query, "query")),
  }));
  svc.handle("checkPayoutEligibility", async (req, ctx) => {
    const { wallet_id: _w, ...eligibility } = await checkEligibility(deps, tenantOf(ctx.auth), participantId(req.params));
    return { body: { eligibility } };
  });
  svc.handle("putBankAccount", async (req, ctx) => {
    const { bankAccount, created } = await putBankAccount(deps, tenantOf(ctx.auth), participantId(req.params), parseOrThrow(schemas.BankAccountBody, req.body));
    return { status: created ? 201 : 200, body: { bank_account: bankAccount } };
  });
  svc.handle("getBankAccount", async (req, ctx) => ({ body: await getBankAccount(deps, tenantOf(ctx.auth), participantId(req.params)) }));
  svc.handle("putPayoutSchedule", async (req, ctx) => ({
    body: await putPayoutSchedule(deps, tenantOf(ctx.auth), participantId(req.params), parseOrThrow(schemas.PayoutScheduleBody, req.body)),
  }));
  svc.handle("getPayoutStatement", async (req, ctx) => ({
    body: await getPayoutStatement(deps, tenantOf(ctx.auth), req.params["payout_id"] ?? "", parseOrThrow(schemas.PayoutStatementQuery, req.query, "query")),
  }));
  svc.handlePage("page.payoutStatement", (req) => statementPage(deps, req));
  svc.handle("getPayoutSchedule", async (req, ctx) => ({ body: await getPayoutSchedule(deps, tenantOf(ctx.auth), participantId(req.params)) }));
}
