/**
 * Real resources of every kind in one org's sandbox, made through the public API, and the map from a route's
 * path parameter to the id of its kind. The route fuzz and the isolation sweep fill every route's path from
 * this map, so a route whose parameter has no entry here fails them until the map names a sample for it.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { generateKeyRingEntry } from "@treasury/service-kit";
import { makeScratchDir } from "@treasury/testing";
import { createOrg } from "../../services/gateway/src/admin.ts";
import { ACH_ORIGIN_ENV } from "./payouts-stack.ts";
import { startProcessorStandIn } from "./processor-stand-in.ts";
import { call, LOOPBACK_WEBHOOKS_ENV, startStack, type Stack } from "./stack.ts";

type Body = Record<string, unknown>;

/**
 * Every service running, configured as in production (PII and receipt-sealing keys, the live bank rail, the card
 * processor's webhook secret), with sandbox webhooks allowed to a local receiver and the rate budgets lifted.
 */
export interface SampleStack {
  s: Stack;
  /** A second org, with no resources of its own. */
  orgB: string;
  /** A local webhook receiver that answers 200 to every delivery. */
  hookUrl: string;
  stop(): Promise<void>;
}

const LIFTED = { capacity: 1e9, refill_per_sec: 1e9 };
/** The card processor's webhook signing secret the payments service checks events against. */
export const STRIPE_WEBHOOK_SECRET = "whsec_samples_stand_in_secret";

export async function startSampleStack(): Promise<SampleStack> {
  const piiKeys = generateKeyRingEntry("samples1");
  // The card processor configured (a loopback stand-in), so live checkouts reach the participant checks.
  const processor = await startProcessorStandIn();
  const s = await startStack({
    serviceEnv: {
      kyc: { PII_KEYS: piiKeys },
      payments: { STRIPE_WEBHOOK_SECRET, STRIPE_SECRET_KEY: "sk_live_samples_stand_in", STRIPE_API_BASE: processor.url, STRIPE_MAX_NETWORK_RETRIES: "0" },
      // The live bank rail configured, so live payouts reach the participant and wallet checks.
      payouts: { PII_KEYS: piiKeys, PAYOUTS_ACH_DIR: makeScratchDir("samples-ach-"), PAYOUTS_ACH_CUT_INTERVAL_MS: "0", ...ACH_ORIGIN_ENV },
      receipts: { RECEIPTS_SEALING_KEYS: generateKeyRingEntry("samples2") },
      tax: { PII_KEYS: generateKeyRingEntry("samples3") },
      ...LOOPBACK_WEBHOOKS_ENV,
    },
  });
  const sql = s.env.adminSql;
  const orgB = (await createOrg(sql, { name: "Other Marketplace" })).org_id;
  // These files make hundreds of writes a second: the budgets are not what they test.
  const limits = sql.json({ read: LIFTED, write: LIFTED, treasury_write: LIFTED, record_sale: LIFTED });
  await sql`update gateway.orgs set rate_limits = ${limits} where id in (${s.orgId}, ${orgB})`;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => res.writeHead(200).end("ok"));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    s,
    orgB,
    hookUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    async stop() {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      await s.stop();
      await processor.close();
    },
  };
}

/** What one org owns after createSamples, by kind. */
export interface Samples {
  /** Path parameter name → an id of that kind (the map every route's path is filled from). */
  pathIds: Readonly<Record<string, string>>;
  /** Ids that the org's list routes show, by kind: each must appear in one of its own lists. */
  listed: Readonly<Record<string, string>>;
  /** Every id the org was handed, for finding them in answers to anyone else. */
  all: readonly string[];
  saleReference: string;
  saleTransactionId: string;
  /** The owner (consumer subject) of the consumer wallet. */
  buyer: string;
  /** The platform transaction of a shared-wallet spend by the buyer. */
  sharedSpendTransactionId: string;
  consumerWalletId: string;
  creatorWalletId: string;
  endpointId: string;
  deliveryId: string;
  /** A risk alert configuration (POST /v1/configure-alerts names it in its body). */
  alertConfigId: string;
  /** A sent invoice and the transaction that posted its receivable (receive-payment names either in its body). */
  invoiceId: string;
  invoiceTransactionId: string;
  bankLineId: string;
  /** A checkout still pending, for the hosted checkout page. */
  pendingCheckoutId: string;
  walletSessionId: string;
}

export type Api = (method: string, path: string, body?: unknown) => Promise<{ status: number; body: Body }>;

export function apiWith(baseUrl: string, key: string): Api {
  return async (method, path, body) => {
    const r = await call(baseUrl, method, path, { key, ...(body === undefined ? {} : { body }) });
    return { status: r.status, body: r.body };
  };
}

async function expectStatus(api: Api, method: string, path: string, body: unknown, status: number): Promise<Body> {
  const r = await api(method, path, body);
  if (r.status !== status) throw new Error(`${method} ${path} answered ${r.status}, expected ${status}: ${JSON.stringify(r.body).slice(0, 500)}`);
  return r.body;
}

const field = (b: Body, ...path: string[]): string => {
  let v: unknown = b;
  for (const k of path) v = (v as Body | undefined)?.[k];
  if (typeof v !== "string" || v === "") throw new Error(`no ${path.join(".")} in ${JSON.stringify(b).slice(0, 500)}`);
  return v;
};

export const BANK_ACCOUNT = {
  account_holder_name: "Ada Lovelace",
  routing_number: "011000015",
  account_number: "000123456789",
  account_type: "checking",
} as const;

export const CREATOR_KYC = {
  legal_name: "Ada Quill Lovelace",
  email: "ada.quill@example.com",
  date_of_birth: "1990-12-10",
  address: { line1: "12 Analytical Row", city: "London", postal_code: "NW1 6XE", country: "GB" },
  document_evidence: [{ type: "government_id", file_id: "file_passport" }],
  tax_id_type: "ssn",
  tax_id_last4: "6789",
  certify_tax_info: true,
} as const;

/**
 * A participant with KYC and a bank account, a completed checkout with its hold, receipt and proof, a refund and
 * a pending refund request on it, a payout, a funded consumer wallet with a hosted session, an imported statement
 * with one matched and one unmatched line, and a webhook endpoint with a delivery: all made with `api` (one
 * org's sandbox key).
 */
export async function createSamples(api: Api, hookUrl: string, tag: string): Promise<Samples> {
  const { endpointId, participant } = await sampleParticipant(api, hookUrl, tag);
  const sale = await sampleSale(api, participant);
  const payout = await samplePayout(api, participant, tag);
  const wallet = await sampleWallet(api, participant, tag);
  const bank = await sampleBankImport(api, tag);
  const deliveryId = await sampleDelivery(api, endpointId);
  const risk = await sampleRisk(api, hookUrl, tag);
  const invoice = await sampleInvoice(api, tag);
  const tax = await sampleTax(api, participant);

  const pathIds = {
    participant_id: participant,
    wallet_id: wallet.consumerWalletId,
    hold_id: sale.holdId,
    checkout_id: sale.checkoutId,
    payout_id: payout.payoutId,
    transaction_id: sale.saleTransactionId,
    receipt_id: sale.receiptId,
    refund_id: sale.refundId,
    refund_request_id: sale.refundRequestId,
    match_id: bank.match.id,
    policy_id: risk.policyId,
    evaluation_id: risk.evaluationId,
    invoice_id: invoice.invoiceId,
    document_id: tax.documentId,
    generation_id: tax.generationId,
    export_id: tax.exportId,
    part: "1",
    tax_year: tax.taxYear,
  };
  const listed = {
    participant,
    consumerWalletId: wallet.consumerWalletId,
    creatorWalletId: payout.creatorWalletId,
    holdId: sale.holdId,
    payoutId: payout.payoutId,
    refundId: sale.refundId,
    refundRequestId: sale.refundRequestId,
    saleTransactionId: sale.saleTransactionId,
    bankLineId: bank.bankLineId,
    endpointId,
    policyId: risk.policyId,
    alertConfigId: risk.alertConfigId,
    invoiceId: invoice.invoiceId,
    taxDocumentId: tax.documentId,
  };
  const all = allIds(pathIds, listed, [...handedIds(sale, payout, wallet, bank, deliveryId), invoice.invoiceTransactionId]);
  return {
    pathIds,
    listed,
    all,
    saleReference: sale.saleReference,
    saleTransactionId: sale.saleTransactionId,
    buyer: wallet.buyer,
    sharedSpendTransactionId: wallet.sharedSpendTransactionId,
    consumerWalletId: wallet.consumerWalletId,
    creatorWalletId: payout.creatorWalletId,
    endpointId,
    deliveryId,
    alertConfigId: risk.alertConfigId,
    invoiceId: invoice.invoiceId,
    invoiceTransactionId: invoice.invoiceTransactionId,
    bankLineId: bank.bankLineId,
    pendingCheckoutId: wallet.pendingCheckoutId,
    walletSessionId: wallet.walletSessionId,
  };
}

/**
 * Every id the org was handed. A year is not an id: "2026" is in every timestamp of that year, so it is no sign of
 * a leak; nor is an export's part number.
 */
function allIds(pathIds: Record<string, string>, listed: Record<string, string>, more: string[]): string[] {
  const { tax_year: _year, part: _part, ...ids } = pathIds;
  return [...new Set([...Object.values(ids), ...Object.values(listed), ...more])];
}

/** Ids the samples were handed that no path or list names. */
function handedIds(
  sale: Awaited<ReturnType<typeof sampleSale>>,
  payout: Awaited<ReturnType<typeof samplePayout>>,
  wallet: Awaited<ReturnType<typeof sampleWallet>>,
  bank: Awaited<ReturnType<typeof sampleBankImport>>,
  deliveryId: string,
): string[] {
  return [
    wallet.buyer,
    sale.saleReference,
    sale.refundTransactionId,
    findTransactionId(payout.funding),
    bank.incomeTransactionId,
    wallet.sharedSpendTransactionId,
    bank.importId,
    bank.match.bank_line_id,
    deliveryId,
    wallet.walletSessionId,
    wallet.pendingCheckoutId,
  ];
}

/** A webhook endpoint, and a participant with KYC and a bank account. */
async function sampleParticipant(api: Api, hookUrl: string, tag: string): Promise<{ endpointId: string; participant: string }> {
  const endpoint = await expectStatus(api, "POST", "/v1/webhooks", { action: "create", url: hookUrl, description: `samples ${tag}` }, 201);
  const endpointId = field(endpoint, "data", "id");
  const participant = `smp_${tag}_creator`;
  await expectStatus(api, "POST", "/v1/participants", { participant_id: participant, display_name: "Sample Creator", default_split_percent: 80 }, 201);
  await expectStatus(api, "POST", `/v1/kyc/creators/${participant}`, CREATOR_KYC, 201);
  await expectStatus(api, "PUT", `/v1/participants/${participant}/bank-account`, BANK_ACCOUNT, 201);
  return { endpointId, participant };
}

/** A completed checkout with its hold, receipt and proof, a refund and a pending refund request on it. */
async function sampleSale(api: Api, participant: string) {
  const checkout = await expectStatus(api, "POST", "/v1/checkout-sessions", { participant_id: participant, amount: 10_000, hold_funds: true }, 201);
  const checkoutId = field(checkout, "checkout_session", "id");
  const completed = await expectStatus(api, "POST", `/v1/sandbox/checkouts/${checkoutId}/complete`, {}, 200);
  const saleTransactionId = field(completed, "checkout_session", "sale_transaction_id");
  const saleReference = field(completed, "checkout_session", "sale_reference");
  const holdId = field(completed, "checkout_session", "hold_id");
  const receiptId = field(await expectStatus(api, "POST", "/v1/receipts/generate", { checkout_id: checkoutId }, 201), "receipt_id");
  await expectStatus(api, "GET", `/v1/receipts/${receiptId}/proof`, undefined, 200);
  const refund = await expectStatus(api, "POST", "/v1/refunds", { sale_reference: saleReference, reason: "sample refund", amount: 500 }, 201);
  const refundId = field(refund, "refund", "id");
  const refundTransactionId = field(refund, "refund", "transaction_id");
  const refundRequest = await expectStatus(api, "POST", "/v1/refund-requests", { sale_reference: saleReference, amount: 1_000, reason: "sample request" }, 201);
  const refundRequestId = field(refundRequest, "refund_request", "id");
  return { checkoutId, saleTransactionId, saleReference, holdId, receiptId, refundId, refundTransactionId, refundRequestId };
}

/** Money the creator can pay out now (the checkout's share stays held), and a payout of some of it. */
async function samplePayout(api: Api, participant: string, tag: string) {
  const funding = await expectStatus(
    api,
    "POST",
    "/v1/record-sale",
    { reference_id: `smp_${tag}_funding`, creator_id: participant, amount: 5_000, creator_percent: 100 },
    201,
  );
  const payout = await expectStatus(api, "POST", "/v1/payouts", { participant_id: participant, amount: 1_500, reference_id: `smp_${tag}_payout` }, 201);
  const payoutId = field(payout, "payout", "id");
  const creatorWalletId = field(payout, "payout", "wallet_id");
  return { funding, payoutId, creatorWalletId };
}

/** A funded consumer wallet with a shared-wallet spend and a hosted session, and a checkout still pending. */
async function sampleWallet(api: Api, participant: string, tag: string) {
  const buyer = `smp_${tag}_buyer`;
  const consumerWalletId = field(await expectStatus(api, "POST", "/v1/wallets", { owner_id: buyer }, 201), "wallet", "id");
  await expectStatus(api, "POST", `/v1/wallets/${consumerWalletId}/topups`, { amount: 2_500, reference_id: `smp_${tag}_topup` }, 201);
  const spend = await expectStatus(
    api,
    "POST",
    "/v1/wallets/shared-spend",
    { consumer_sub: buyer, amount: 300, reference_id: `smp_${tag}_spend`, creator_id: participant },
    201,
  );
  const sharedSpendTransactionId = /"platform_transaction_id":"(txn_[A-Za-z0-9]+)"/.exec(JSON.stringify(spend))?.[1] ?? findTransactionId(spend);
  const walletSessionId = field(await expectStatus(api, "POST", "/v1/wallet-sessions", { wallet_id: consumerWalletId }, 201), "wallet_session", "id");
  const pendingCheckoutId = field(
    await expectStatus(api, "POST", "/v1/checkout-sessions", { participant_id: participant, amount: 700 }, 201),
    "checkout_session",
    "id",
  );
  return { buyer, consumerWalletId, sharedSpendTransactionId, walletSessionId, pendingCheckoutId };
}

/** Recorded income, and an imported statement with one line matched to it and one unmatched. */
async function sampleBankImport(api: Api, tag: string) {
  const income = await expectStatus(api, "POST", "/v1/record-income", { reference_id: `smp_${tag}_income`, amount: 4_200, date: "2024-07-10" }, 201);
  const incomeTransactionId = findTransactionId(income);
  const csv = `Date,Text,Ref,Amount\n2024-07-10,Transfer smp_${tag}_income,smp_${tag}_income,42.00\n2024-07-11,Bank fee,FEE_${tag},-4.99\n`;
  const imported = await expectStatus(
    api,
    "POST",
    "/v1/import-transactions",
    { action: "import", format: "csv", data: csv, mapping: { date: "Date", description: "Text", reference: "Ref", amount: "Amount", currency: "USD" } },
    201,
  );
  const importId = field(imported, "import", "id");
  const auto = await expectStatus(api, "POST", "/v1/reconciliations/auto-match", { start_date: "2024-07-01", end_date: "2024-07-31" }, 200);
  const match = (auto["auto_match"] as { matches: { id: string; bank_line_id: string }[] }).matches[0];
  if (match === undefined) throw new Error(`auto-match matched nothing: ${JSON.stringify(auto).slice(0, 500)}`);
  const unmatched = await expectStatus(api, "GET", "/v1/reconciliations/unmatched", undefined, 200);
  const bankLineId = field({ l: (unmatched["bank_lines"] as Body[])[0] ?? {} }, "l", "id");
  return { incomeTransactionId, importId, match, bankLineId };
}

/**
 * A fraud policy, an evaluation on demand and an alert configuration. The policy applies to on-demand evaluations
 * only, so it never stands in the way of the other samples' money movements.
 */
async function sampleRisk(api: Api, hookUrl: string, tag: string) {
  const body = { policy_type: "amount_limit", config: { max_amount_cents: 1_000_000 }, applies_to: ["evaluation"] };
  const policyId = field(await expectStatus(api, "POST", "/v1/fraud/policies", body, 201), "policy", "id");
  const evaluation = await expectStatus(api, "POST", "/v1/fraud/evaluations", { idempotency_key: `smp_${tag}_eval`, amount: 2_500 }, 201);
  const alert = await expectStatus(
    api,
    "POST",
    "/v1/configure-alerts",
    { action: "create", alert_type: "review_required", channel: "webhook", webhook_url: hookUrl },
    201,
  );
  return { policyId, evaluationId: field(evaluation, "evaluation", "id"), alertConfigId: field(alert, "alert_config", "id") };
}

/** A sent invoice (its receivable posted), with room for a few small payments. */
async function sampleInvoice(api: Api, tag: string) {
  const body = {
    customer_name: "Sample Customer",
    customer_id: `smp_${tag}_customer`,
    line_items: [{ description: "Sample work", quantity: 4, unit_price_cents: 2_500 }],
  };
  const invoiceId = field(await expectStatus(api, "POST", "/v1/invoices", body, 201), "invoice", "id");
  const sent = await expectStatus(api, "POST", `/v1/invoices/${invoiceId}/send`, {}, 200);
  return { invoiceId, invoiceTransactionId: field(sent, "invoice", "transaction_id") };
}

/** The W-9 the sample participant certifies (the tax service seals its TIN). */
export const TAX_PROFILE = {
  legal_name: "Ada Lovelace",
  tin_type: "ssn",
  tin: "401-87-3921",
  address: { line1: "12 Analytical Way", city: "Austin", state: "TX", postal_code: "78701" },
  certified: true,
} as const;

/**
 * A tax profile and a draft 1099-K of the running year for the sample participant (its checkout sale counts; the
 * org's threshold for the year is set to nothing). Only an ended year is filed, so mark-filed answers 422 here.
 */
async function sampleTax(api: Api, participant: string): Promise<{ documentId: string; generationId: string; exportId: string; taxYear: string }> {
  const year = new Date().getUTCFullYear();
  await expectStatus(api, "PUT", `/v1/participants/${participant}/tax-profile`, TAX_PROFILE, 201);
  await expectStatus(api, "PUT", "/v1/tax/settings", { tax_year: year, form: "1099-K", threshold_cents: 0, threshold_transactions: 0 }, 200);
  const generated = await expectStatus(api, "POST", "/v1/tax/documents/generate", { tax_year: year }, 200);
  const list = await expectStatus(api, "GET", `/v1/tax/documents?tax_year=${year}&participant_id=${participant}`, undefined, 200);
  const exported = await expectStatus(api, "POST", "/v1/tax/exports", { tax_year: year, format: "csv" }, 200);
  return {
    documentId: field({ d: (list["tax_documents"] as Body[])[0] ?? {} }, "d", "id"),
    generationId: field(generated, "generation", "id"),
    exportId: field(exported, "export", "id"),
    taxYear: String(year),
  };
}

/** A test delivery to the endpoint; answers its id. */
async function sampleDelivery(api: Api, endpointId: string): Promise<string> {
  await expectStatus(api, "POST", "/v1/webhooks", { action: "test", endpoint_id: endpointId }, 200);
  const deliveries = await expectStatus(api, "POST", "/v1/webhooks", { action: "deliveries", endpoint_id: endpointId }, 200);
  return field({ d: (deliveries["data"] as Body[])[0] ?? {} }, "d", "id");
}

/** The transaction id in a record-* answer, wherever the operation puts it. */
function findTransactionId(b: Body): string {
  const m = /"(txn_[A-Za-z0-9]+)"/.exec(JSON.stringify(b));
  if (m?.[1] === undefined) throw new Error(`no transaction id in ${JSON.stringify(b).slice(0, 500)}`);
  return m[1];
}

/** The `:name` parameters of a route path, in order. */
export function pathParamsOf(path: string): string[] {
  return [...path.matchAll(/:([A-Za-z_]+)/g)].map((m) => m[1] ?? "");
}

/** The routes' parameters that `ids` has no sample for, as `operation.param`. */
export function missingSamples(routes: readonly { operation: string; path: string }[], ids: Readonly<Record<string, string>>): string[] {
  return routes.flatMap((r) =>
    pathParamsOf(r.path)
      .filter((p) => ids[p] === undefined)
      .map((p) => `${r.operation}.${p}`),
  );
}

/** The route's path with each parameter replaced by its sample id; throws for a parameter with no sample. */
export function fillPath(path: string, ids: Readonly<Record<string, string>>): string {
  return path.replace(/:([A-Za-z_]+)/g, (_m, name: string) => {
    const id = ids[name];
    if (id === undefined) throw new Error(`no sample id for path parameter "${name}" of ${path}: add one to createSamples' pathIds`);
    return encodeURIComponent(id);
  });
}
