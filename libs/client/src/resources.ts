/**
 * The client's methods, grouped by resource: each names exactly one operation of the OpenAPI document. A unit test
 * checks that every operation has one method (processor webhooks excepted), so an operation added to the route
 * table fails the build until it is given a name here.
 */
import type { OperationId } from "./generated/operations.ts";

export const RESOURCES = {
  participants: {
    list: "listParticipants",
    create: "createParticipant",
    get: "getParticipant",
    getReserve: "getReserve",
    setReserve: "putReserve",
    getPayoutSchedule: "getPayoutSchedule",
    setPayoutSchedule: "putPayoutSchedule",
    payoutEligibility: "checkPayoutEligibility",
    getBankAccount: "getBankAccount",
    setBankAccount: "putBankAccount",
  },
  kyc: {
    getBusiness: "getBusinessVerification",
    submitBusiness: "submitBusinessVerification",
    getCreator: "getCreatorVerification",
    submitCreator: "submitCreatorVerification",
  },
  wallets: {
    list: "listWallets",
    create: "createWallet",
    get: "getWallet",
    entries: "listWalletEntries",
    topUp: "depositToWallet",
    withdraw: "withdrawFromWallet",
    createSession: "createWalletSession",
    sharedSpend: "spendSharedWallet",
    reverseSharedSpend: "reverseSharedWalletSpend",
  },
  holds: {
    list: "listHolds",
    summary: "getHoldsSummary",
    create: "createHold",
    release: "releaseHold",
  },
  transfers: {
    create: "transferBetweenWallets",
  },
  checkouts: {
    create: "createCheckoutSession",
  },
  sandbox: {
    completeCheckout: "sandboxCompleteCheckout",
    failCheckout: "sandboxFailCheckout",
    getClock: "getSandboxClock",
    advanceClock: "advanceSandboxClock",
    sendTestWebhook: "sandboxSendTestWebhook",
  },
  payouts: {
    list: "listPayouts",
    create: "requestPayout",
    get: "getPayout",
    statement: "getPayoutStatement",
  },
  receipts: {
    generate: "generateReceipt",
    get: "getReceipt",
    proof: "getReceiptProof",
    transactionProof: "getTransactionReceiptProof",
    verify: "verifyReceiptProof",
    submitSignature: "submitReceiptProofSignature",
    jwks: "getReceiptJwks",
  },
  refunds: {
    list: "listRefunds",
    create: "createRefund",
    get: "getRefund",
  },
  refundRequests: {
    list: "listRefundRequests",
    create: "createRefundRequest",
    get: "getRefundRequest",
    approve: "approveRefundRequest",
    reject: "rejectRefundRequest",
    cancel: "cancelRefundRequest",
  },
  transactions: {
    list: "getTransactions",
    import: "importTransactions",
    reverse: "reverseTransaction",
  },
  accounting: {
    recordSale: "recordSale",
    recordIncome: "recordIncome",
    recordExpense: "recordExpense",
    recordBill: "recordBill",
    payBill: "payBill",
    recordAdjustment: "recordAdjustment",
    recordOpeningBalance: "recordOpeningBalance",
    recordTransfer: "recordTransfer",
    generateReport: "generateReport",
    trialBalance: "getTrialBalance",
    balanceSheet: "getBalanceSheet",
    profitLoss: "getProfitLoss",
  },
  invoices: {
    list: "listInvoices",
    create: "createInvoice",
    get: "getInvoice",
    send: "sendInvoice",
    recordPayment: "recordInvoicePayment",
    void: "voidInvoice",
    receivePayment: "receivePayment",
    arAging: "getArAging",
    apAging: "getApAging",
  },
  tax: {
    getProfile: "getTaxProfile",
    setProfile: "putTaxProfile",
    calculation: "getTaxCalculation",
    getSettings: "getTaxSettings",
    setSettings: "putTaxSettings",
    generateDocuments: "generateTaxDocuments",
    getGeneration: "getTaxGeneration",
    createExport: "createTaxExport",
    getExport: "getTaxExport",
    exportPart: "getTaxExportPart",
    exportDocuments: "exportTaxDocuments",
    listDocuments: "listTaxDocuments",
    getDocument: "getTaxDocument",
    documentPdf: "getTaxDocumentPdf",
    markFiled: "markTaxDocumentFiled",
    correct: "correctTaxDocument",
    summary: "getTaxSummary",
  },
  reconciliations: {
    autoMatch: "autoMatchReconciliation",
    createMatch: "createReconciliationMatch",
    deleteMatch: "deleteReconciliationMatch",
    unmatched: "listUnmatched",
  },
  webhooks: {
    manage: "manageWebhooks",
    jwks: "getWebhookJwks",
  },
  fraud: {
    listPolicies: "listFraudPolicies",
    createPolicy: "createFraudPolicy",
    deletePolicy: "deleteFraudPolicy",
    evaluate: "createFraudEvaluation",
    getEvaluation: "getFraudEvaluation",
  },
  alerts: {
    configure: "configureAlerts",
  },
  health: {
    check: "healthCheck",
    checkPost: "healthCheckPost",
  },
} as const satisfies Record<string, Record<string, OperationId>>;

/** Operations the client does not offer: the card processor's signed events are sent by the processor, not by an integration. */
export const NOT_OFFERED: readonly OperationId[] = ["receiveStripeWebhook"];

/** Paged lists whose page carries two lists (bank lines and transactions): iterate them by hand. */
export const NO_ITERATOR = ["listUnmatched"] as const;
