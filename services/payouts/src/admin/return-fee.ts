/**
 * `admin payouts set-return-fee|get-return-fee`: what a returned payout costs its creator, per org and
 * environment. The platform agrees the fee with its creators; operators set it, so every change is in the audit
 * log with who and why. Setting it and its audit row commit together; it applies to returns ingested from then on.
 */
import { DomainError, type AdminRequest, type Tenant } from "@treasury/contracts";
import { flag, orgEnvironmentFlags, orgEnvironmentTarget, requiredFlag, type Service } from "@treasury/service-kit";
import { returnFee, setReturnFee } from "../store/settings.ts";

type FeeTenant = Tenant & { env: "test" | "live" };

/** The most a return may cost: $1,000.00 (the table's check says the same). */
export const RETURN_FEE_MAX_CENTS = 100_000;

function centsFlag(request: AdminRequest): number {
  const raw = requiredFlag(request, "cents");
  const n = /^\d{1,9}$/.test(raw) ? Number(raw) : Number.NaN;
  if (!(n >= 0 && n <= RETURN_FEE_MAX_CENTS)) {
    throw new DomainError("validation_error", `--cents must be a whole number of cents from 0 to ${RETURN_FEE_MAX_CENTS}`, {
      details: [{ path: "cents", message: "must be an integer from 0 to 100000" }],
    });
  }
  return n;
}

const answer = (t: FeeTenant, fee: number): Record<string, unknown> => ({ org_id: t.orgId, environment: t.env, return_fee_cents: fee });

export function registerReturnFee(svc: Pick<Service, "handleAdmin">): void {
  svc.handleAdmin<{ tenant: FeeTenant; cents: number }>("payouts set-return-fee", {
    decode: (request) => ({ tenant: orgEnvironmentFlags(request), cents: centsFlag(request) }),
    audit: { atomic: true, target: ({ request }) => orgEnvironmentTarget(request, { return_fee_cents: flag(request, "cents") ?? null }) },
    run: async ({ input: { tenant, cents }, q }) => {
      await setReturnFee(q, tenant, cents);
      return answer(tenant, await returnFee(q, tenant));
    },
  });
  svc.handleAdmin<FeeTenant>("payouts get-return-fee", {
    decode: orgEnvironmentFlags,
    run: async ({ input, q }) => answer(input, await returnFee(q, input)),
  });
}
