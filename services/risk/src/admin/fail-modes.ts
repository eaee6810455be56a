/**
 * `admin risk set-fail-mode|get-fail-mode`: what an org's money movement does when risk does not answer within the
 * caller's deadline. Operators choose per org, environment and operation; every change is audited with who and
 * why, and committed with its audit row. Callers learn the modes with each evaluation answer (kit risk-gate.ts).
 */
import { DomainError, schemas, type AdminRequest, type Tenant } from "@treasury/contracts";
import { flag, orgEnvironmentFlags, orgEnvironmentTarget, requiredFlag, type Service, type Tx } from "@treasury/service-kit";
import { readFailModes, setFailMode } from "../store/fail-modes.ts";
import type { FailModes } from "../usecases/ports.ts";

type ModeTenant = Tenant & { env: "test" | "live" };

function oneOf<T extends string>(request: AdminRequest, name: string, allowed: readonly T[]): T {
  const raw = requiredFlag(request, name);
  if (!(allowed as readonly string[]).includes(raw)) {
    throw new DomainError("validation_error", `--${name} must be one of ${allowed.join(", ")}`, {
      details: [{ path: name, message: `must be one of ${allowed.join(", ")}` }],
    });
  }
  return raw as T;
}

const answer = (t: ModeTenant, modes: FailModes): Record<string, unknown> => ({ org_id: t.orgId, environment: t.env, fail_modes: modes });

interface SetInput {
  tenant: ModeTenant;
  operation: schemas.MoneyRiskOperation;
  mode: schemas.RiskFailMode;
}

export function registerFailModes(svc: Pick<Service, "handleAdmin">): void {
  svc.handleAdmin<SetInput>("risk set-fail-mode", {
    decode: (request) => ({
      tenant: orgEnvironmentFlags(request),
      operation: oneOf(request, "operation", schemas.MONEY_RISK_OPERATIONS),
      mode: oneOf(request, "mode", schemas.RISK_FAIL_MODES),
    }),
    audit: {
      atomic: true,
      target: ({ request }) => orgEnvironmentTarget(request, { operation: flag(request, "operation") ?? null, mode: flag(request, "mode") ?? null }),
    },
    run: async ({ input: { tenant, operation, mode }, q }) => answer(tenant, await setFailMode(q as Tx, tenant, operation, mode)),
  });
  svc.handleAdmin<ModeTenant>("risk get-fail-mode", {
    decode: orgEnvironmentFlags,
    run: async ({ input, q }) => answer(input, await readFailModes(q, input)),
  });
}
