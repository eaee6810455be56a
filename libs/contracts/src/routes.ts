/**
 * The route table: every public operation with its method, path, owning service, RPC subject, required scope
 * (docs/api.md, Scopes), rate-limit class and schemas. The gateway's router, its scope checks, its rate
 * limits and the OpenAPI document all read this one table.
 */
import * as S from "./schemas.ts";
import { INVOICING_ROUTES } from "./routes-invoicing.ts";
import { RISK_ROUTES } from "./routes-risk.ts";
import { TAX_ROUTES } from "./routes-tax.ts";

export type { FileAnswer, HttpMethod, RateClass, RouteDef } from "./route-def.ts";
export { BODY_LIMIT_BYTES, IMPORT_BODY_LIMIT_BYTES, PROCESSOR_WEBHOOK_BODY_LIMIT_BYTES, RPC_ENVELOPE_BYTES_MAX } from "./route-def.ts";
import { IMPORT_BODY_LIMIT_BYTES, PROCESSOR_WEBHOOK_BODY_LIMIT_BYTES, RPC_ENVELOPE_BYTES_MAX, type RateClass, type RouteDef } from "./route-def.ts";

type R = Omit<RouteDef, "method" | "path">;
const get = (path: string, r: Omit<R, "scope" | "rateClass"> & Partial<Pick<R, "scope" | "rateClass">>): RouteDef => ({
  method: "GET",
  path,
  scope: "read",
  rateClass: "read",
  ...r,
});
const post = (path: string, r: Omit<R, "rateClass"> & Partial<Pick<R, "rateClass">>): RouteDef => ({ method: "POST", path, rateClass: "write", ...r });
/** PUT replaces a resource the path names whole (a participant's bank account). */
const put = (path: string, r: Omit<R, "rateClass"> & Partial<Pick<R, "rateClass">>): RouteDef => ({ method: "PUT", path, rateClass: "write", ...r });

export const ROUTES: readonly RouteDef[] = [
  // Participants
  get("/v1/participants", { operation: "listParticipants", service: "ledger", summary: "List participants", query: S.ListParticipantsQuery }),
  post("/v1/participants", {
    operation: "createParticipant",
    service: "ledger",
    scope: "creators",
    summary: "Create a participant (idempotent on participant_id)",
    body: S.CreateParticipantBody,
    creates: true,
  }),
  get("/v1/participants/:participant_id", { operation: "getParticipant", service: "ledger", summary: "Participant with balance snapshot and active holds" }),
  put("/v1/participants/:participant_id/reserve", {
    operation: "putReserve",
    service: "ledger",
    scope: "creators",
    summary: "Set the participant's reserve (rolling, fixed or none); applies to sales from now on",
    body: S.ReserveBody,
  }),
  get("/v1/participants/:participant_id/reserve", { operation: "getReserve", service: "ledger", summary: "The participant's reserve" }),
  put("/v1/participants/:participant_id/payout-schedule", {
    operation: "putPayoutSchedule",
    service: "payouts",
    scope: "payouts",
    summary: "Set the participant's payout schedule",
    body: S.PayoutScheduleBody,
  }),
  get("/v1/participants/:participant_id/payout-schedule", {
    operation: "getPayoutSchedule",
    service: "payouts",
    summary: "The participant's payout schedule with its next run",
  }),
  get("/v1/participants/:participant_id/payout-eligibility", {
    operation: "checkPayoutEligibility",
    service: "payouts",
    summary: "Payout eligibility and blockers",
  }),

  // KYC
  get("/v1/kyc/business", { operation: "getBusinessVerification", service: "kyc", summary: "Organization KYB profile" }),
  post("/v1/kyc/business", {
    operation: "submitBusinessVerification",
    service: "kyc",
    scope: "creators",
    summary: "Submit business verification (KYB)",
    body: S.SubmitBusinessBody,
  }),
  get("/v1/kyc/creators/:participant_id", { operation: "getCreatorVerification", service: "kyc", summary: "Creator KYC packet" }),
  post("/v1/kyc/creators/:participant_id", {
    operation: "submitCreatorVerification",
    service: "kyc",
    scope: "creators",
    summary: "Submit creator verification (KYC)",
    body: S.SubmitCreatorBody,
  }),

  // Wallets
  get("/v1/wallets", { operation: "listWallets", service: "ledger", summary: "List wallets", query: S.ListWalletsQuery }),
  post("/v1/wallets", {
    operation: "createWallet",
    service: "ledger",
    scope: "payments",
    summary: "Create (upsert) a consumer credit wallet",
    body: S.CreateWalletBody,
    creates: true,
  }),
  get("/v1/wallets/:wallet_id", { operation: "getWallet", service: "ledger", summary: "Wallet detail" }),
  get("/v1/wallets/:wallet_id/entries", {
    operation: "listWalletEntries",
    service: "ledger",
    summary: "Wallet entries, newest first",
    query: S.ListEntriesQuery,
  }),
  post("/v1/wallets/:wallet_id/topups", {
    operation: "depositToWallet",
    service: "ledger",
    scope: "payments",
    summary: "Top up a consumer wallet",
    body: S.WalletMovementBody,
    creates: true,
  }),
  post("/v1/wallets/:wallet_id/withdrawals", {
    operation: "withdrawFromWallet",
    service: "ledger",
    scope: "payments",
    summary: "Withdraw from a redeemable wallet",
    body: S.WalletMovementBody,
    creates: true,
  }),
  post("/v1/wallet-sessions", {
    operation: "createWalletSession",
    service: "payments",
    scope: "payments",
    summary: "Create a hosted wallet page session",
    body: S.CreateWalletSessionBody,
    creates: true,
  }),
  post("/v1/wallets/shared-spend", {
    operation: "spendSharedWallet",
    service: "payments",
    scope: "payments",
    summary: "Spend a buyer's shared wallet with a split",
    body: S.SharedSpendBody,
    creates: true,
  }),
  post("/v1/wallets/shared-spend/reverse", {
    operation: "reverseSharedWalletSpend",
    service: "payments",
    scope: "payments",
    summary: "Reverse a shared spend",
    body: S.SharedSpendReverseBody,
  }),

  // Holds and transfers
  get("/v1/holds", { operation: "listHolds", service: "ledger", summary: "List held funds", query: S.ListHoldsQuery }),
  get("/v1/holds/summary", { operation: "getHoldsSummary", service: "ledger", summary: "Held and releasable totals" }),
  post("/v1/holds", { operation: "createHold", service: "ledger", scope: "payments", summary: "Create a hold", body: S.CreateHoldBody, creates: true }),
  post("/v1/holds/:hold_id/release", {
    operation: "releaseHold",
    service: "ledger",
    scope: "payments",
    rateClass: "treasury_write",
    summary: "Release a hold",
    body: S.ReleaseHoldBody,
  }),
  post("/v1/transfers", {
    operation: "transferBetweenWallets",
    service: "ledger",
    scope: "payments",
    summary: "Transfer between wallets",
    body: S.TransferBody,
    creates: true,
  }),

  // Payments
  post("/v1/checkout-sessions", {
    operation: "createCheckoutSession",
    service: "payments",
    scope: "payments",
    rateClass: "treasury_write",
    summary: "Create a checkout session",
    body: S.CreateCheckoutBody,
    creates: true,
  }),
  post("/v1/sandbox/checkouts/:checkout_id/complete", {
    operation: "sandboxCompleteCheckout",
    service: "payments",
    scope: "payments",
    rateClass: "treasury_write",
    summary: "Complete a sandbox checkout",
    body: S.SandboxCheckoutActionBody,
  }),
  get("/v1/sandbox/clock", { operation: "getSandboxClock", service: "ledger", summary: "The org's sandbox test clock" }),
  post("/v1/sandbox/clock/advance", {
    operation: "advanceSandboxClock",
    service: "ledger",
    scope: "payments",
    summary: "Move the org's sandbox clock forward; what became due runs within seconds",
    body: S.SandboxClockAdvanceBody,
  }),
  post("/v1/processor-webhooks/stripe", {
    operation: "receiveStripeWebhook",
    service: "payments",
    scope: null,
    summary: "Card processor (Stripe) events; authenticated by the Stripe-Signature header, not an API key",
    rawBody: { signatureHeader: "stripe-signature" },
    bodyLimitBytes: PROCESSOR_WEBHOOK_BODY_LIMIT_BYTES,
  }),
  post("/v1/sandbox/checkouts/:checkout_id/fail", {
    operation: "sandboxFailCheckout",
    service: "payments",
    scope: "payments",
    rateClass: "treasury_write",
    summary: "Fail a sandbox checkout",
    body: S.SandboxCheckoutActionBody,
  }),

  // Payouts
  post("/v1/payouts", {
    operation: "requestPayout",
    service: "payouts",
    scope: "payouts",
    rateClass: "treasury_write",
    summary: "Request a payout",
    body: S.CreatePayoutBody,
    creates: true,
  }),
  get("/v1/payouts/:payout_id", { operation: "getPayout", service: "payouts", summary: "Payout status" }),
  get("/v1/payouts/:payout_id/statement", {
    operation: "getPayoutStatement",
    service: "payouts",
    summary: "What a payout is made of: opening balance, every movement since the previous payout, closing balance (JSON or CSV)",
    query: S.PayoutStatementQuery,
    fileResponse: true,
  }),
  get("/v1/payouts", { operation: "listPayouts", service: "payouts", summary: "List payouts, newest first", query: S.ListPayoutsQuery }),
  put("/v1/participants/:participant_id/bank-account", {
    operation: "putBankAccount",
    service: "payouts",
    scope: "payouts",
    summary: "Set the participant's payout bank account (replaces it)",
    body: S.BankAccountBody,
    creates: true,
  }),
  get("/v1/participants/:participant_id/bank-account", {
    operation: "getBankAccount",
    service: "payouts",
    summary: "The participant's payout bank account, masked",
  }),

  // Receipts
  post("/v1/receipts/generate", {
    operation: "generateReceipt",
    service: "receipts",
    scope: "payments",
    summary: "Generate a receipt",
    body: S.GenerateReceiptBody,
    creates: true,
  }),
  get("/v1/receipts/jwks", { operation: "getReceiptJwks", service: "receipts", scope: null, summary: "Service signing keys (JWKS)" }),
  get("/v1/receipts/proofs/:transaction_id", {
    operation: "getTransactionReceiptProof",
    service: "receipts",
    summary: "Fetch or create the proof of a transaction",
  }),
  post("/v1/receipts/verify", {
    operation: "verifyReceiptProof",
    service: "receipts",
    scope: "read",
    rateClass: "read",
    summary: "Verify a receipt proof",
    body: S.VerifyReceiptBody,
  }),
  get("/v1/receipts/:receipt_id", { operation: "getReceipt", service: "receipts", summary: "Receipt" }),
  get("/v1/receipts/:receipt_id/proof", { operation: "getReceiptProof", service: "receipts", summary: "Fetch or create the signed ledger proof" }),
  post("/v1/receipts/:receipt_id/proof/signatures", {
    operation: "submitReceiptProofSignature",
    service: "receipts",
    scope: "payments",
    summary: "Submit a counterparty signature",
    body: S.ProofSignatureBody,
    creates: true,
  }),

  // Refunds
  get("/v1/refunds", { operation: "listRefunds", service: "refunds", summary: "List refunds", query: S.ListRefundsQuery }),
  post("/v1/refunds", {
    operation: "createRefund",
    service: "refunds",
    scope: "payments",
    rateClass: "treasury_write",
    summary: "Refund a sale",
    body: S.CreateRefundBody,
    creates: true,
  }),
  get("/v1/refunds/:refund_id", { operation: "getRefund", service: "refunds", summary: "Refund" }),
  get("/v1/refund-requests", { operation: "listRefundRequests", service: "refunds", summary: "List refund requests", query: S.ListRefundRequestsQuery }),
  post("/v1/refund-requests", {
    operation: "createRefundRequest",
    service: "refunds",
    scope: "payments",
    summary: "Create a buyer refund request",
    body: S.CreateRefundRequestBody,
    creates: true,
  }),
  get("/v1/refund-requests/:refund_request_id", { operation: "getRefundRequest", service: "refunds", summary: "Refund request" }),
  post("/v1/refund-requests/:refund_request_id/approve", {
    operation: "approveRefundRequest",
    service: "refunds",
    scope: "payments",
    rateClass: "treasury_write",
    summary: "Approve (executes the refund)",
    body: S.RefundRequestActionBody,
  }),
  post("/v1/refund-requests/:refund_request_id/reject", {
    operation: "rejectRefundRequest",
    service: "refunds",
    scope: "payments",
    summary: "Reject a refund request",
    body: S.RefundRequestActionBody,
  }),
  post("/v1/refund-requests/:refund_request_id/cancel", {
    operation: "cancelRefundRequest",
    service: "refunds",
    scope: "payments",
    summary: "Cancel a refund request (an unreviewed one also cancels itself at its expires_at)",
    body: S.RefundRequestActionBody,
  }),

  // Transactions and accounting
  get("/v1/get-transactions", { operation: "getTransactions", service: "ledger", summary: "List transactions", query: S.GetTransactionsQuery }),
  post("/v1/import-transactions", {
    operation: "importTransactions",
    service: "ledger",
    scope: "accounting",
    summary: "Parse or import bank statements",
    body: S.ImportTransactionsBody,
    bodyLimitBytes: IMPORT_BODY_LIMIT_BYTES - RPC_ENVELOPE_BYTES_MAX,
  }),
  post("/v1/record-sale", {
    operation: "recordSale",
    service: "ledger",
    scope: "accounting",
    rateClass: "record_sale",
    summary: "Record a sale with its split",
    body: S.RecordSaleBody,
    creates: true,
  }),
  post("/v1/record-income", {
    operation: "recordIncome",
    service: "ledger",
    scope: "accounting",
    summary: "Record income",
    body: S.RecordIncomeBody,
    creates: true,
  }),
  post("/v1/record-expense", {
    operation: "recordExpense",
    service: "ledger",
    scope: "accounting",
    summary: "Record an expense",
    body: S.RecordExpenseBody,
    creates: true,
  }),
  post("/v1/record-bill", { operation: "recordBill", service: "ledger", scope: "accounting", summary: "Record a bill", body: S.RecordBillBody, creates: true }),
  post("/v1/pay-bill", { operation: "payBill", service: "ledger", scope: "accounting", summary: "Pay a bill", body: S.PayBillBody, creates: true }),
  post("/v1/record-adjustment", {
    operation: "recordAdjustment",
    service: "ledger",
    scope: "accounting",
    summary: "Record an adjusting entry",
    body: S.RecordAdjustmentBody,
    creates: true,
  }),
  post("/v1/record-opening-balance", {
    operation: "recordOpeningBalance",
    service: "ledger",
    scope: "accounting",
    summary: "Record opening balances",
    body: S.RecordOpeningBalanceBody,
    creates: true,
  }),
  post("/v1/record-transfer", {
    operation: "recordTransfer",
    service: "ledger",
    scope: "accounting",
    summary: "Record an internal transfer",
    body: S.RecordTransferBody,
    creates: true,
  }),
  post("/v1/reverse-transaction", {
    operation: "reverseTransaction",
    service: "ledger",
    scope: "accounting",
    summary: "Reverse a transaction (full or partial)",
    body: S.ReverseTransactionBody,
    creates: true,
  }),
  post("/v1/generate-report", {
    operation: "generateReport",
    service: "ledger",
    scope: "read",
    rateClass: "read",
    summary: "Generate a report (trial balance, …)",
    body: S.GenerateReportBody,
  }),
  get("/v1/trial-balance", { operation: "getTrialBalance", service: "ledger", summary: "Trial balance as of a date (as_of_date)", query: S.ReportQuery }),
  get("/v1/balance-sheet", { operation: "getBalanceSheet", service: "ledger", summary: "Balance sheet as of a date (as_of_date)", query: S.ReportQuery }),
  get("/v1/profit-loss", { operation: "getProfitLoss", service: "ledger", summary: "Profit and loss for start_date..end_date", query: S.ReportQuery }),

  // Reconciliation of imported bank lines with ledger transactions. The route table has no DELETE, so a match
  // is removed with POST …/delete.
  post("/v1/reconciliations/auto-match", {
    operation: "autoMatchReconciliation",
    service: "ledger",
    scope: "accounting",
    summary: "Match unmatched bank lines to ledger transactions",
    body: S.AutoMatchBody,
  }),
  post("/v1/reconciliations/matches", {
    operation: "createReconciliationMatch",
    service: "ledger",
    scope: "accounting",
    summary: "Match a bank line to a transaction by hand",
    body: S.ManualMatchBody,
    creates: true,
  }),
  post("/v1/reconciliations/matches/:match_id/delete", {
    operation: "deleteReconciliationMatch",
    service: "ledger",
    scope: "accounting",
    summary: "Unmatch a bank line and its transaction",
  }),
  get("/v1/reconciliations/unmatched", {
    operation: "listUnmatched",
    service: "ledger",
    summary: "Unmatched bank lines and ledger transactions",
    query: S.UnmatchedQuery,
  }),

  // Webhooks
  post("/v1/webhooks", {
    operation: "manageWebhooks",
    service: "webhooks",
    scope: "webhooks",
    summary: "Webhook endpoint management (action-based)",
    body: S.WebhooksBody,
  }),
  get("/v1/webhooks/jwks", {
    operation: "getWebhookJwks",
    service: "webhooks",
    scope: null,
    summary: "Public keys that sign ed25519 webhook deliveries (JWKS)",
    cacheControl: `public, max-age=${S.WEBHOOK_JWKS_MAX_AGE_S}`,
  }),
  post("/v1/sandbox/webhooks/test", {
    operation: "sandboxSendTestWebhook",
    service: "webhooks",
    scope: "webhooks",
    summary: "Send a sandbox test event",
    body: S.SandboxWebhookTestBody,
  }),

  // Risk (routes-risk.ts).
  ...RISK_ROUTES,

  // Invoicing (wire decisions §11): its own file, as the table would pass a file's length.
  ...INVOICING_ROUTES,
  // Tax (routes-tax.ts).
  ...TAX_ROUTES,
];

export { PAGE_ROUTES, type PageRouteDef } from "./page-routes.ts";

/** Routes owned by one service. */
export function routesOf(service: string): RouteDef[] {
  return ROUTES.filter((r) => r.service === service);
}

export function findRoute(operation: string): RouteDef | undefined {
  return ROUTES.find((r) => r.operation === operation);
}

/** Rate-limit classes per key: token buckets (docs/api.md, Conventions). */
export const RATE_LIMITS: Record<RateClass, { capacity: number; refillPerSec: number }> = {
  read: { capacity: 1000, refillPerSec: 1000 / 60 },
  record_sale: { capacity: 100, refillPerSec: 100 },
  treasury_write: { capacity: 30, refillPerSec: 300 / 60 },
  write: { capacity: 600, refillPerSec: 600 / 60 },
};

export const API_VERSION = "2026-03-01";
export const SUPPORTED_VERSIONS = [API_VERSION] as const;
