/**
 * The system for the payouts tests: the shared stack (gateway, ledger, payments, webhooks) plus kyc and payouts
 * built with a PII key ring and, for payouts, a real ACH drop directory and origin. Helpers make participants,
 * fund them, verify creators and businesses, and read the money back.
 */
import { expect } from "vitest";
import { generateKeyRingEntry, parseKeyRing } from "@treasury/service-kit";
import { makeScratchDir, setupTestEnv, type TestEnv } from "@treasury/testing";
import { buildKyc, type KycService } from "../../services/kyc/src/service.ts";
import { pgKycStore } from "../../services/kyc/src/store/verifications.ts";
import { reviewSubmission } from "../../services/kyc/src/usecases/review.ts";
import { buildPayouts, type PayoutsBuildDeps, type PayoutsService } from "../../services/payouts/src/service.ts";
import { admin as adminOf } from "./admin-run.ts";
import { call, startStack, type Stack } from "./stack.ts";

/** A bank origin as a platform's ODFI would assign it (real routing numbers, fictitious company ids). */
export const ACH_ORIGIN_ENV = {
  PAYOUTS_ACH_IMMEDIATE_DESTINATION: "091000019",
  PAYOUTS_ACH_IMMEDIATE_DESTINATION_NAME: "ODFI BANK",
  PAYOUTS_ACH_IMMEDIATE_ORIGIN: "1987654321",
  PAYOUTS_ACH_IMMEDIATE_ORIGIN_NAME: "TREASURY PLATFORM",
  PAYOUTS_ACH_COMPANY_NAME: "TREASURY PLAT",
  PAYOUTS_ACH_COMPANY_ID: "1987654321",
  PAYOUTS_ACH_ODFI_ROUTING: "091000019",
} as const;

export interface PayoutsStack {
  env: TestEnv;
  s: Stack;
  kyc: KycService;
  payouts: PayoutsService | undefined;
  achDir: string;
  piiKeys: string;
  /** Environment of a payouts process on this stack (spawned or built). */
  payoutsEnv(extra?: Record<string, string>): Record<string, string>;
  startPayouts(extra?: Record<string, string>, deps?: PayoutsBuildDeps): Promise<PayoutsService>;
  stop(): Promise<void>;
}

export async function startPayoutsStack(opts: { buildPayouts?: boolean; payoutsEnv?: Record<string, string>; console?: boolean } = {}): Promise<PayoutsStack> {
  const env = await setupTestEnv();
  const s = await startStack({ env, services: ["ledger", "payments", "webhooks", ...(opts.console === true ? (["console"] as const) : [])] });
  // Generous limits for this org: the files make many treasury writes in a few seconds.
  const unlimited = { capacity: 100_000, refill_per_sec: 100_000 };
  await env.adminSql`update gateway.orgs set rate_limits = ${env.adminSql.json({ treasury_write: unlimited, write: unlimited, read: unlimited })} where id = ${s.orgId}`;
  const piiKeys = generateKeyRingEntry("e2e1");
  const kyc = await buildKyc(env.env("kyc", { PII_KEYS: piiKeys }));
  await kyc.start();
  const achDir = makeScratchDir("payouts-ach-");
  const started: PayoutsService[] = [];
  const payoutsEnv = (extra: Record<string, string> = {}) =>
    env.env("payouts", { PII_KEYS: piiKeys, PAYOUTS_ACH_DIR: achDir, PAYOUTS_ACH_CUT_INTERVAL_MS: "0", ...ACH_ORIGIN_ENV, ...opts.payoutsEnv, ...extra });
  const startPayouts = async (extra: Record<string, string> = {}, deps: PayoutsBuildDeps = {}) => {
    const svc = await buildPayouts(payoutsEnv(extra), { keyRing: parseKeyRing(piiKeys), ...deps });
    await svc.start();
    started.push(svc);
    return svc;
  };
  const payouts = opts.buildPayouts === false ? undefined : await startPayouts();
  return {
    env,
    s,
    kyc,
    payouts,
    achDir,
    piiKeys,
    payoutsEnv,
    startPayouts,
    async stop() {
      await Promise.all(started.map((p) => p.stop()));
      await kyc.stop();
      await s.stop();
      await env.cleanup();
    },
  };
}

export type Api = (method: string, path: string, key: string, body?: unknown) => Promise<{ status: number; body: Record<string, unknown> }>;

export function apiOf(p: PayoutsStack): Api {
  return async (method, path, key, body) => {
    const r = await call(p.s.baseUrl, method, path, { key, ...(body !== undefined ? { body } : {}) });
    return { status: r.status, body: r.body };
  };
}

let seq = 0;
export async function newParticipant(api: Api, key: string, prefix = "creator"): Promise<string> {
  const id = `${prefix}_${Date.now().toString(36)}_${seq++}`;
  const r = await api("POST", "/v1/participants", key, { participant_id: id, display_name: `Creator ${id}` });
  expect(r.status).toBe(201);
  return id;
}

/** Credits the creator's wallet with exactly `amount` through the ledger (a recorded sale, all of it the creator's). */
export async function fund(api: Api, key: string, pid: string, amount: number): Promise<void> {
  const r = await api("POST", "/v1/record-sale", key, { reference_id: `fund_${pid}_${seq++}`, creator_id: pid, amount, creator_percent: 100 });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
}

export async function creatorWallet(
  api: Api,
  key: string,
  pid: string,
): Promise<{ id: string; balance: number; available_balance: number; held_amount: number }> {
  const r = await api("GET", `/v1/wallets?owner_id=${pid}&wallet_type=creator_earnings`, key);
  expect(r.status).toBe(200);
  const w = (r.body["wallets"] as Array<{ id: string; balance: number; available_balance: number; held_amount: number }>)[0];
  if (w === undefined) throw new Error(`no creator wallet for ${pid}`);
  return w;
}

export const BANK_ACCOUNT = {
  account_holder_name: "Ada Lovelace",
  routing_number: "011000015",
  account_number: "000123456789",
  account_type: "checking",
} as const;

export function creatorKycBody(): Record<string, unknown> {
  return {
    legal_name: "Ada Quill Lovelace",
    email: "ada.quill@example.com",
    date_of_birth: "1990-12-10",
    address: { line1: "12 Analytical Row", city: "London", postal_code: "NW1 6XE", country: "GB" },
    document_evidence: [{ type: "government_id", file_id: "file_passport" }],
    tax_id_type: "ssn",
    tax_id_last4: "6789",
    certify_tax_info: true,
  };
}

/** Submits the creator's verification with `key` and, for a live one, approves it as an operator would. */
export async function verifyCreator(p: PayoutsStack, api: Api, key: string, pid: string): Promise<void> {
  const r = await api("POST", `/v1/kyc/creators/${pid}`, key, creatorKycBody());
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  const kyc = r.body["creator_kyc"] as { status: string; latest_submission: { id: string } };
  if (kyc.status !== "approved")
    await reviewSubmission(pgKycStore(p.env.adminSql), {
      submissionId: kyc.latest_submission.id,
      action: "approve",
      actor: "ops:test",
      reason: "documents match",
    });
}

/** Submits and approves the organisation's business verification (live payouts need it). */
export async function verifyBusiness(p: PayoutsStack, api: Api, key: string): Promise<void> {
  const r = await api("POST", "/v1/kyc/business", key, {
    business_type: "corporation",
    legal_name: "Quill Works Inc",
    primary_contact: { name: "Grace Quill", email: "grace@quill.example" },
    business_address: { line1: "500 Market St", city: "San Francisco", state: "CA", postal_code: "94105", country: "US" },
    document_evidence: [{ type: "articles_of_incorporation", url: "https://files.example/articles.pdf" }],
    tax_id_type: "ein",
    tax_id_last4: "4321",
    beneficial_owners: [{ name: "Grace Quill", date_of_birth: "1985-03-14", ownership_percent: 100 }],
  });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  const kyb = r.body["business_kyb"] as { latest_submission: { id: string } };
  await reviewSubmission(pgKycStore(p.env.adminSql), { submissionId: kyb.latest_submission.id, action: "approve", actor: "ops:test", reason: "verified" });
}

/** Runs `npm run admin -- …` against this stack (its NATS and prefix, as the operator identity). */
export function admin(p: PayoutsStack, ...args: string[]): Promise<{ code: number; out: Record<string, unknown>; err: Record<string, unknown> }> {
  return adminOf(p.env, ...args);
}

export async function count(p: PayoutsStack, sql: TemplateStringsArray, ...args: unknown[]): Promise<number> {
  const rows = (await p.env.adminSql(sql, ...(args as never[]))) as unknown as { n: string }[];
  return Number(rows[0]?.n ?? 0);
}
