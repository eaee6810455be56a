/**
 * The operator commands the refunds service answers (ADMIN_COMMANDS of @treasury/contracts): each org's refund
 * shortfall policy per environment (docs/adr/0009-refund-shortfall.md). Setting it and its audit row commit
 * together; reading it records nothing.
 */
import { DomainError, type AdminRequest, type Tenant } from "@treasury/contracts";
import { flag, orgEnvironmentFlags, orgEnvironmentTarget, type Service } from "@treasury/service-kit";
import type { ShortfallPolicy } from "../domain/refund.ts";
import { setShortfallPolicy, SHORTFALL_POLICIES, shortfallPolicy } from "../store/settings.ts";

type PolicyTenant = Tenant & { env: "test" | "live" };

function policyFlag(request: AdminRequest): ShortfallPolicy {
  const policy = SHORTFALL_POLICIES.find((p) => p === flag(request, "shortfall"));
  if (policy === undefined) throw new DomainError("validation_error", `--shortfall must be one of ${SHORTFALL_POLICIES.join(", ")}`);
  return policy;
}

const answer = (s: PolicyTenant, policy: ShortfallPolicy): Record<string, unknown> => ({ org_id: s.orgId, environment: s.env, shortfall_policy: policy });

export function registerAdminCommands(svc: Pick<Service, "handleAdmin">): void {
  svc.handleAdmin<{ tenant: PolicyTenant; policy: ShortfallPolicy }>("refunds set-policy", {
    decode: (request) => ({ tenant: orgEnvironmentFlags(request), policy: policyFlag(request) }),
    audit: { atomic: true, target: ({ request }) => orgEnvironmentTarget(request, { shortfall_policy: flag(request, "shortfall") ?? null }) },
    // Applies to refunds recorded from now on; the answer is the policy as stored.
    run: async ({ input, q }) => {
      await setShortfallPolicy(q, input.tenant, input.policy);
      return answer(input.tenant, await shortfallPolicy(q, input.tenant));
    },
  });
  svc.handleAdmin<PolicyTenant>("refunds get-policy", {
    decode: orgEnvironmentFlags,
    run: async ({ input, q }) => answer(input, await shortfallPolicy(q, input)),
  });
}
