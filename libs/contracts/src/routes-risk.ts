/**
 * The risk service's operations (wire-decisions §9), in a block of their own: every one needs the `risk` scope,
 * reads included (policies say what the org watches for). The route table (routes.ts) lists them with the rest.
 */
import * as S from "./schemas.ts";
import type { RouteDef } from "./route-def.ts";

type R = Omit<RouteDef, "method" | "path" | "service" | "scope" | "rateClass">;
const route = (method: RouteDef["method"], path: string, r: R): RouteDef => ({
  method,
  path,
  service: "risk",
  scope: "risk",
  rateClass: method === "GET" ? "read" : "write",
  ...r,
});

export const RISK_ROUTES: readonly RouteDef[] = [
  route("GET", "/v1/fraud/policies", { operation: "listFraudPolicies", summary: "List fraud policies", query: S.ListPoliciesQuery }),
  route("POST", "/v1/fraud/policies", {
    operation: "createFraudPolicy",
    summary: "Create a fraud policy (config checked against its policy_type)",
    body: S.CreatePolicyBody,
    creates: true,
  }),
  route("DELETE", "/v1/fraud/policies/:policy_id", { operation: "deleteFraudPolicy", summary: "Delete a fraud policy" }),
  route("POST", "/v1/fraud/evaluations", {
    operation: "createFraudEvaluation",
    summary: "Evaluate a proposed movement against the org's policies (idempotent on idempotency_key)",
    body: S.CreateEvaluationBody,
    creates: true,
  }),
  route("GET", "/v1/fraud/evaluations/:evaluation_id", { operation: "getFraudEvaluation", summary: "A risk evaluation with its hits" }),
  route("POST", "/v1/configure-alerts", {
    operation: "configureAlerts",
    summary: "Risk alert configuration (action-based: list, create, update, delete, test)",
    body: S.ConfigureAlertsBody,
  }),
];
