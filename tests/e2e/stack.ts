/**
 * A whole system in one test process: the gateway and every backend service, built with a per-file database
 * and subject prefix from the harness, plus an org with keys. Black-box tests talk to it over HTTP.
 */
import type { Service } from "@treasury/service-kit";
import { setupTestEnv, type TestEnv } from "@treasury/testing";
import type { Scope } from "@treasury/contracts";
import { buildGateway, type Gateway } from "../../services/gateway/src/service.ts";
import { createApiKey, createOrg } from "../../services/gateway/src/admin.ts";
import { buildLedger } from "../../services/ledger/src/service.ts";
import { buildPayments } from "../../services/payments/src/service.ts";
import { buildPayouts } from "../../services/payouts/src/service.ts";
import { buildRefunds } from "../../services/refunds/src/service.ts";
import { buildReceipts } from "../../services/receipts/src/service.ts";
import { buildKyc } from "../../services/kyc/src/service.ts";
import { buildWebhooks } from "../../services/webhooks/src/service.ts";
import { buildRisk } from "../../services/risk/src/service.ts";
import { buildInvoicing } from "../../services/invoicing/src/service.ts";
import { buildTax } from "../../services/tax/src/service.ts";
import { buildConsole, type ConsoleService } from "../../services/console/src/service.ts";

export const BACKEND_BUILDERS = {
  ledger: buildLedger,
  payments: buildPayments,
  payouts: buildPayouts,
  refunds: buildRefunds,
  receipts: buildReceipts,
  kyc: buildKyc,
  webhooks: buildWebhooks,
  risk: buildRisk,
  invoicing: buildInvoicing,
  tax: buildTax,
  // Its own HTTP port (ephemeral here) behind the gateway's alt listener; plain http in tests.
  console: (env: Record<string, string | undefined>) => buildConsole({ CONSOLE_PORT: "0", CONSOLE_SECURE_COOKIES: "false", ...env }),
} as const;

export interface Stack {
  env: TestEnv;
  gateway: Gateway;
  services: Record<string, Service>;
  baseUrl: string;
  altUrl: string;
  orgId: string;
  testKey: string;
  liveKey: string;
  key(opts: { environment?: "sandbox" | "live"; scopes?: Scope[] | null; orgId?: string }): Promise<{ api_key: string; key_id: string }>;
  stop(): Promise<void>;
}

/** Settings for tests whose receivers listen on 127.0.0.1 (sandbox webhook endpoints and risk alert webhooks may then point there). */
export const LOOPBACK_WEBHOOKS_ENV = { webhooks: { WEBHOOK_ALLOW_PRIVATE_URLS: "true" }, risk: { RISK_ALERT_ALLOW_PRIVATE_URLS: "true" } } as const;

/** Services that ask risk before money moves (kit risk-gate.ts): with any of them, risk runs too, as it does deployed. */
const RISK_CALLERS: readonly string[] = ["ledger", "payments", "payouts", "refunds"];

function withRisk(names: (keyof typeof BACKEND_BUILDERS)[]): (keyof typeof BACKEND_BUILDERS)[] {
  return names.some((n) => RISK_CALLERS.includes(n)) && !names.includes("risk") ? [...names, "risk"] : names;
}

export async function startStack(
  opts: {
    gatewayEnv?: Record<string, string>;
    services?: (keyof typeof BACKEND_BUILDERS)[];
    env?: TestEnv;
    /** Extra environment per backend service (e.g. LOOPBACK_WEBHOOKS_ENV). */
    serviceEnv?: Partial<Record<keyof typeof BACKEND_BUILDERS, Record<string, string>>>;
  } = {},
): Promise<Stack> {
  const env = opts.env ?? (await setupTestEnv());
  const services: Record<string, Service> = {};
  for (const name of withRisk(opts.services ?? (Object.keys(BACKEND_BUILDERS) as (keyof typeof BACKEND_BUILDERS)[]))) {
    const svc = await BACKEND_BUILDERS[name](env.env(name, opts.serviceEnv?.[name]));
    await svc.start();
    services[name] = svc;
  }
  const consoleSvc = services["console"] as ConsoleService | undefined;
  const consoleUrl = consoleSvc === undefined ? {} : { CONSOLE_URL: `http://127.0.0.1:${consoleSvc.httpPort()}` };
  const gateway = await buildGateway({ ...env.env("gateway"), PORT: "0", ALT_PORT: "0", AUTH_CACHE_TTL_MS: "5000", ...consoleUrl, ...opts.gatewayEnv });
  const { org_id } = await createOrg(env.adminSql, { name: "Test Marketplace" });
  const key = (k: { environment?: "sandbox" | "live"; scopes?: Scope[] | null; orgId?: string }) =>
    createApiKey(env.adminSql, { orgId: k.orgId ?? org_id, environment: k.environment ?? "sandbox", scopes: k.scopes ?? null, forceUnverified: true });
  const testKey = (await key({})).api_key;
  const liveKey = (await key({ environment: "live" })).api_key;
  return {
    env,
    gateway,
    services,
    baseUrl: `http://127.0.0.1:${gateway.ports.main}`,
    altUrl: `http://127.0.0.1:${gateway.ports.alt}`,
    orgId: org_id,
    testKey,
    liveKey,
    key,
    async stop() {
      await gateway.stop();
      await Promise.all(Object.values(services).map((s) => s.stop()));
      if (!opts.env) await env.cleanup();
    },
  };
}

/** fetch + JSON with the API key; returns status, headers and parsed body. */
export async function call(
  baseUrl: string,
  method: string,
  path: string,
  opts: { key?: string | undefined; body?: unknown; rawBody?: string; headers?: Record<string, string> } = {},
): Promise<{ status: number; headers: Headers; body: Record<string, unknown> }> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.key !== undefined) headers["x-api-key"] = opts.key;
  let body: string | undefined;
  if (opts.rawBody !== undefined) body = opts.rawBody;
  else if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers["content-type"] ??= "application/json";
  }
  const res = await fetch(baseUrl + path, { method, headers, body: body ?? null });
  const text = await res.text();
  let parsed: Record<string, unknown>;
  try {
    parsed = JSON.parse(text) as Record<string, unknown>;
  } catch {
    parsed = { __raw: text };
  }
  return { status: res.status, headers: res.headers, body: parsed };
}
