// Proves tenant isolation on every route of the table: org A's sandbox resources, named by id in a path, a body
// or a list filter, are invisible to org A's live key and to org B's sandbox and live keys (404 with the error
// envelope, never a 2xx), no answer to them carries any of A's ids, and A's own sandbox key finds every one.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ERROR_CODES, ROUTES, buildOpenApiDocument, isErrorCode, type RouteDef } from "@treasury/contracts";
import { call } from "./stack.ts";
import {
  BANK_ACCOUNT,
  CREATOR_KYC,
  TAX_PROFILE,
  createSamples,
  fillPath,
  missingSamples,
  pathParamsOf,
  startSampleStack,
  type SampleStack,
  type Samples,
} from "./route-samples.ts";

type Body = Record<string, unknown>;
type Answer = { status: number; body: Body };

let ss: SampleStack;
let samples: Samples;
const keys = { aSandbox: "", aLive: "", bSandbox: "", bLive: "" };
/** The keys that must not see A's sandbox data. */
const FOREIGN = ["aLive", "bSandbox", "bLive"] as const;

beforeAll(async () => {
  ss = await startSampleStack();
  keys.aSandbox = ss.s.testKey;
  keys.aLive = ss.s.liveKey;
  keys.bSandbox = (await ss.s.key({ orgId: ss.orgB })).api_key;
  keys.bLive = (await ss.s.key({ orgId: ss.orgB, environment: "live" })).api_key;
  samples = await createSamples((method, path, body) => send(keys.aSandbox, method, path, body), ss.hookUrl, "iso");
}, 120_000);
afterAll(async () => {
  await ss?.stop();
});

async function send(key: string, method: string, path: string, body?: unknown): Promise<Answer> {
  const r = await call(ss.s.baseUrl, method, path, { key, ...(body === undefined ? {} : { body }) });
  return { status: r.status, body: r.body };
}

/** A's ids found in an answer, other than those the request itself named (or that are part of a named value). */
function leakedIds(answer: Answer, named: readonly string[]): string[] {
  const text = JSON.stringify(answer.body);
  return samples.all.filter((id) => !named.some((n) => n.includes(id)) && text.includes(id));
}

/**
 * Refusals that do not depend on the id (a sandbox-only action asked with a live key): the same answer for A's id
 * as for an id nobody has, so they tell nothing about A.
 */
const ID_INDEPENDENT_CODES: ReadonlySet<string> = new Set(["sandbox_only"]);

/** An id of the same kind that nobody has: its last character changed within its class (hex stays hex). */
function ghostOf(id: string): string {
  const last = id.at(-1) ?? "0";
  const next = /[0-9]/.test(last)
    ? String((Number(last) + 1) % 10)
    : /[a-f]/.test(last)
      ? last === "f"
        ? "a"
        : String.fromCharCode(last.charCodeAt(0) + 1)
      : last === "z"
        ? "y"
        : "z";
  return id.slice(0, -1) + next;
}

/**
 * A's resource is invisible to `answer`: a 404 envelope (or an id-independent refusal) exactly like the answer for
 * an id nobody has, carrying none of A's ids beyond those the request named.
 */
function expectInvisible(answer: Answer, ghost: Answer, what: string, named: readonly string[]): void {
  const code = String(answer.body["error_code"]);
  const shown = `${what} → ${answer.status} ${JSON.stringify(answer.body).slice(0, 400)}`;
  expect(answer.body["success"], shown).toBe(false);
  expect(answer.body["request_id"], shown).toEqual(expect.stringMatching(/^req_/));
  expect(isErrorCode(code) && (ERROR_CODES[code].status === 404 || ID_INDEPENDENT_CODES.has(code)), shown).toBe(true);
  expect([answer.status, code], `${shown}; an unknown id got ${ghost.status} ${String(ghost.body["error_code"])}`).toEqual([
    ghost.status,
    ghost.body["error_code"],
  ]);
  expect(leakedIds(answer, named), shown).toEqual([]);
}

/**
 * Bodies that make each id-taking operation valid, so that only the id can make it fail. An operation whose
 * body schema refuses `{}` and that has no entry here fails the sweep until it gets one.
 */
const VALID_BODIES: Readonly<Record<string, Body>> = {
  submitCreatorVerification: { ...CREATOR_KYC },
  depositToWallet: { amount: 100, reference_id: "iso_topup" },
  withdrawFromWallet: { amount: 100, reference_id: "iso_withdrawal" },
  putBankAccount: { ...BANK_ACCOUNT },
  putReserve: { type: "fixed", amount_cents: 0 },
  putPayoutSchedule: { interval: "manual" },
  recordInvoicePayment: { amount: 100, reference_id: "iso_invoice_payment" },
  putTaxProfile: { ...TAX_PROFILE },
  submitReceiptProofSignature: {
    key_id: "iso_key",
    signature: "eyJhbGciOiJFZERTQSJ9..c2lnbmF0dXJl",
    public_key_jwk: { kty: "OKP", crv: "Ed25519", x: "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo" },
  },
};

function bodyFor(route: RouteDef): Body | undefined {
  if (route.method === "GET") return undefined;
  const body = VALID_BODIES[route.operation] ?? {};
  if (route.body && !route.body.safeParse(body).success)
    throw new Error(`${route.operation} refuses ${JSON.stringify(body)}: add a valid body to VALID_BODIES`);
  return body;
}

describe("route coverage", () => {
  it("every path parameter of the route table has a sample id of its kind", () => {
    // Proves a route added with a new kind of id fails here until createSamples makes one.
    expect(missingSamples(ROUTES, samples.pathIds)).toEqual([]);
  });
});

/** Filters a list takes, by query parameter name: each is set to A's id of that kind. */
function filterValues(): Readonly<Record<string, string>> {
  const s = samples;
  const p = s.pathIds["participant_id"] ?? "";
  return {
    participant_id: p,
    creator_id: p,
    owner_id: p,
    venture_id: p,
    sale_reference: s.saleReference,
    wallet_id: s.consumerWalletId,
    customer_id: "smp_iso_customer",
  };
}

/** The query parameters of an operation, as the OpenAPI document lists them. */
function queryParamsOf(route: RouteDef): string[] {
  const doc = buildOpenApiDocument("/") as { paths: Record<string, Record<string, { parameters?: { name: string; in: string }[] }>> };
  const op = doc.paths[route.path.replace(/:([A-Za-z_]+)/g, "{$1}")]?.[route.method.toLowerCase()];
  return (op?.parameters ?? []).filter((p) => p.in === "query").map((p) => p.name);
}

/** The list reads of the table (GET, no path id, a key needed), each without a filter and with each filter it takes. */
function listRequests(): { label: string; path: string }[] {
  const filters = filterValues();
  return ROUTES.filter((r) => r.method === "GET" && r.scope !== null && pathParamsOf(r.path).length === 0).flatMap((r) => {
    const variants = queryParamsOf(r)
      .filter((n) => filters[n] !== undefined)
      .map((n) => `${r.path}?${n}=${encodeURIComponent(filters[n] ?? "")}`);
    return [r.path, ...variants].map((path) => ({ label: `${r.operation} ${path}`, path }));
  });
}

/** Reads that go through a POST body: webhook endpoints and deliveries, import templates, reports, auto-match. */
const POSTED_LISTS: readonly { path: string; body: Body }[] = [
  { path: "/v1/webhooks", body: { action: "list" } },
  { path: "/v1/webhooks", body: { action: "deliveries" } },
  { path: "/v1/import-transactions", body: { action: "get_templates" } },
  { path: "/v1/generate-report", body: { report_type: "transaction_history" } },
  { path: "/v1/reconciliations/auto-match", body: {} },
  { path: "/v1/configure-alerts", body: { action: "list" } },
];

describe("lists", () => {
  it("no list answered to another key holds any of A's ids, while A's own lists show every one", async () => {
    // Proves every list read, unfiltered and filtered by A's ids, hides A's resources from the other keys; the owner's view is the control.
    const seenByA = new Set<string>();
    const requests = [
      ...listRequests().map((l) => ({ ...l, method: "GET", body: undefined as Body | undefined })),
      ...POSTED_LISTS.map((l) => ({ label: `POST ${l.path} ${JSON.stringify(l.body)}`, path: l.path, method: "POST", body: l.body as Body | undefined })),
    ];
    for (const req of requests) {
      for (const k of FOREIGN) {
        const r = await send(keys[k], req.method, req.path, req.body);
        expect(r.status, `${k} ${req.label} → ${JSON.stringify(r.body).slice(0, 300)}`).toBeLessThan(500);
        expect(leakedIds(r, []), `${k} ${req.label}`).toEqual([]);
      }
      const own = await send(keys.aSandbox, req.method, req.path, req.body);
      expect(own.status, `aSandbox ${req.label} → ${JSON.stringify(own.body).slice(0, 300)}`).toBeLessThan(500);
      const text = JSON.stringify(own.body);
      for (const id of Object.values(samples.listed)) if (text.includes(id)) seenByA.add(id);
    }
    expect(
      Object.entries(samples.listed)
        .filter(([, id]) => !seenByA.has(id))
        .map(([kind]) => kind),
    ).toEqual([]);
  });
});

const ID_ROUTES = ROUTES.filter((r) => pathParamsOf(r.path).length > 0);

describe("ids in paths", () => {
  it.each(ID_ROUTES.map((r) => [`${r.method} ${r.path}`, r] as const))("%s: 404 to every other key, found by A's sandbox key", async (_name, route) => {
    // Proves the route answers another key exactly as for an id nobody has, while the owner's key finds the same id.
    const path = fillPath(route.path, samples.pathIds);
    const named = pathParamsOf(route.path).map((p) => samples.pathIds[p] ?? "");
    const body = bodyFor(route);
    const ghostPath = fillPath(route.path, Object.fromEntries(Object.entries(samples.pathIds).map(([p, id]) => [p, ghostOf(id)])));
    for (const k of FOREIGN) {
      const ghost = await send(keys[k], route.method, ghostPath, body);
      expectInvisible(await send(keys[k], route.method, path, body), ghost, `${k} ${route.method} ${path}`, named);
    }
    // The control: the same request with the owner's key finds the resource (an action may still be refused by its state).
    const own = await send(keys.aSandbox, route.method, path, body);
    expect(own.status, `aSandbox ${route.method} ${path} → ${JSON.stringify(own.body).slice(0, 400)}`).not.toBe(404);
    expect(own.status).toBeLessThan(500);
    if (route.method === "GET") expect(own.status).toBe(200);
  });
});

/** Operations naming A's resources in their bodies; each must answer 404 to every other key. */
function bodyProbes(): { operation: string; body: Body }[] {
  const s = samples;
  const p = s.pathIds["participant_id"];
  return [
    { operation: "createHold", body: { participant_id: p, amount: 100, reference_id: "iso_hold_p" } },
    { operation: "createHold", body: { wallet_id: s.creatorWalletId, amount: 100, reference_id: "iso_hold_w" } },
    {
      operation: "transferBetweenWallets",
      body: { from_wallet_id: s.consumerWalletId, to_wallet_id: s.creatorWalletId, amount: 100, reference_id: "iso_transfer" },
    },
    { operation: "transferBetweenWallets", body: { from_participant_id: p, to_participant_id: p, amount: 100, reference_id: "iso_transfer_p" } },
    { operation: "createWalletSession", body: { wallet_id: s.consumerWalletId } },
    { operation: "spendSharedWallet", body: { consumer_sub: s.buyer, amount: 100, reference_id: "iso_spend", creator_id: p } },
    { operation: "reverseSharedWalletSpend", body: { sale_transaction_id: s.sharedSpendTransactionId } },
    { operation: "createCheckoutSession", body: { participant_id: p, amount: 100 } },
    { operation: "requestPayout", body: { participant_id: p, amount: 100, reference_id: "iso_payout_p" } },
    { operation: "requestPayout", body: { wallet_id: s.creatorWalletId, amount: 100, reference_id: "iso_payout_w" } },
    { operation: "generateReceipt", body: { checkout_id: s.pathIds["checkout_id"] } },
    { operation: "generateReceipt", body: { sale_transaction_id: s.saleTransactionId } },
    { operation: "verifyReceiptProof", body: { receipt_id: s.pathIds["receipt_id"] } },
    { operation: "createRefund", body: { sale_reference: s.saleReference, reason: "iso", amount: 100 } },
    { operation: "reverseTransaction", body: { transaction_id: s.saleTransactionId, reason: "iso" } },
    { operation: "createReconciliationMatch", body: { bank_line_id: s.bankLineId, transaction_id: s.saleTransactionId } },
    { operation: "manageWebhooks", body: { action: "update", endpoint_id: s.endpointId, description: "iso" } },
    { operation: "configureAlerts", body: { action: "update", config_id: s.alertConfigId, is_active: true } },
    { operation: "configureAlerts", body: { action: "delete", config_id: s.alertConfigId } },
    { operation: "receivePayment", body: { amount: 100, reference_id: "iso_receive_id", invoice_id: s.invoiceId } },
    { operation: "receivePayment", body: { amount: 100, reference_id: "iso_receive_txn", invoice_transaction_id: s.invoiceTransactionId } },
    { operation: "manageWebhooks", body: { action: "test", endpoint_id: s.endpointId } },
    { operation: "manageWebhooks", body: { action: "deliveries", endpoint_id: s.endpointId } },
    { operation: "manageWebhooks", body: { action: "retry", delivery_id: s.deliveryId } },
    { operation: "manageWebhooks", body: { action: "replay", delivery_id: s.deliveryId } },
    { operation: "manageWebhooks", body: { action: "replay", endpoint_id: s.endpointId, since: "2024-01-01T00:00:00Z" } },
    { operation: "manageWebhooks", body: { action: "rotate_secret", endpoint_id: s.endpointId } },
    { operation: "manageWebhooks", body: { action: "delete", endpoint_id: s.endpointId } },
  ];
}

describe("ids in bodies", () => {
  it("operations naming A's participant, wallets, sale, receipt, bank line, endpoint or delivery answer 404 to every other key", async () => {
    // Proves ids inside bodies are looked up in the caller's own org and mode only; the owner's key is the control.
    for (const probe of bodyProbes()) {
      const route = ROUTES.find((r) => r.operation === probe.operation);
      if (route === undefined) throw new Error(`no route ${probe.operation}`);
      expect(route.body?.safeParse(probe.body).success, `${probe.operation} ${JSON.stringify(probe.body)} is valid`).toBe(true);
      const named = Object.values(probe.body).filter((v): v is string => typeof v === "string");
      const ghostBody = Object.fromEntries(Object.entries(probe.body).map(([f, v]) => [f, typeof v === "string" && samples.all.includes(v) ? ghostOf(v) : v]));
      for (const k of FOREIGN) {
        const ghost = await send(keys[k], route.method, route.path, ghostBody);
        expectInvisible(await send(keys[k], route.method, route.path, probe.body), ghost, `${k} ${probe.operation} ${JSON.stringify(probe.body)}`, named);
      }
      const own = await send(keys.aSandbox, route.method, route.path, probe.body);
      expect(
        [own.status < 500, own.status !== 404],
        `aSandbox ${probe.operation} ${JSON.stringify(probe.body)} → ${own.status} ${JSON.stringify(own.body).slice(0, 300)}`,
      ).toEqual([true, true]);
    }
  });
});

describe("refund requests naming another org's sale", () => {
  it("are refused as the unknown sale they are to the caller, and nothing of A's moves", async () => {
    // Proves a refund request naming another org's sale cannot reach that sale: the sale is looked up in the
    // caller's own org and environment when the request is made, and answers exactly as a sale nobody has.
    const refundsOfSale = async () =>
      (await send(keys.aSandbox, "GET", `/v1/refunds?sale_reference=${encodeURIComponent(samples.saleReference)}`)).body["total"];
    const before = await refundsOfSale();
    for (const k of FOREIGN) {
      const filed = await send(keys[k], "POST", "/v1/refund-requests", { sale_reference: samples.saleReference, amount: 100 });
      expect(filed.status, `${k} → ${JSON.stringify(filed.body).slice(0, 300)}`).toBe(404);
      expect(filed.body["error_code"]).toBe("original_sale_not_found");
      expect(leakedIds(filed, [samples.saleReference])).toEqual([]);
      const nobody = await send(keys[k], "POST", "/v1/refund-requests", { sale_reference: "sale_nobody_has", amount: 100 });
      expect(nobody.status).toBe(404);
    }
    expect(await refundsOfSale()).toBe(before);
  });
});
