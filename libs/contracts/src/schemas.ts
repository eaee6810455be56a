/**
 * Body and query schemas of the public operations (docs/api.md). The gateway validates with these
 * before a request reaches a service; services may re-parse to get typed values.
 * Objects strip unknown fields (clients of the real API send extras); wrong types and missing fields are 400.
 *
 * One file per domain under schemas/, built on the shared fields of schemas/common.ts. The shapes services send
 * each other (request/reply between services, never a public body) are under schemas/internal/. This file gathers
 * them all, so `schemas.<Name>` from @treasury/contracts names each one. Imports point one way: common, then the
 * domains, then internal.
 */
export { Metadata, pagingInt, StringMetadata } from "./schemas/common.ts";
export * from "./schemas/participants.ts";
export * from "./schemas/kyc.ts";
export * from "./schemas/wallets.ts";
export * from "./schemas/holds.ts";
export * from "./schemas/checkout.ts";
export * from "./schemas/payouts.ts";
export * from "./schemas/receipts.ts";
export * from "./schemas/refunds.ts";
export * from "./schemas/ledger-records.ts";
export * from "./schemas/imports.ts";
export * from "./schemas/reconciliation.ts";
export * from "./schemas/webhooks.ts";
export * from "./schemas/money-controls.ts";
export * from "./schemas/risk.ts";
export * from "./schemas/invoicing.ts";
export * from "./schemas/tax.ts";
export * from "./schemas/internal/kyc.ts";
export * from "./schemas/internal/receipts.ts";
export * from "./schemas/internal/refunds.ts";
export * from "./schemas/internal/payouts.ts";
export * from "./schemas/internal/processor-webhooks.ts";
export * from "./schemas/internal/risk.ts";
export * from "./schemas/internal/invoicing.ts";
export * from "./schemas/internal/tax.ts";
