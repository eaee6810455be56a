import type { HttpMethod } from "./route-def.ts";
import type { ServiceName } from "./rpc.ts";

/**
 * Hosted pages: served on the alt listener only, HTML, authorised by the session id/token in the path (never
 * an API key). The owning service answers `svc.<service>.<operation>` with a PageRequest.
 */
export interface PageRouteDef {
  operation: string;
  method: HttpMethod;
  path: string;
  service: Exclude<ServiceName, "gateway">;
  summary: string;
}

export const PAGE_ROUTES: readonly PageRouteDef[] = [
  { method: "GET", path: "/v1/checkout/:checkout_id", service: "payments", operation: "page.checkout", summary: "Hosted checkout page" },
  { method: "POST", path: "/v1/checkout/:checkout_id/pay", service: "payments", operation: "page.checkoutPay", summary: "Checkout page card form" },
  { method: "POST", path: "/v1/checkout/:checkout_id/cancel", service: "payments", operation: "page.checkoutCancel", summary: "Checkout page cancel" },
  { method: "GET", path: "/v1/wallet/:session_id", service: "payments", operation: "page.wallet", summary: "Hosted wallet page" },
  { method: "POST", path: "/v1/wallet/:session_id/topup", service: "payments", operation: "page.walletTopup", summary: "Wallet page top-up form" },
  {
    method: "POST",
    path: "/v1/wallet/:session_id/refund-request",
    service: "payments",
    operation: "page.walletRefundRequest",
    summary: "Wallet page refund-request form",
  },
  { method: "GET", path: "/v1/receipts/:receipt_id/view", service: "receipts", operation: "page.receipt", summary: "Hosted receipt page" },
  {
    method: "GET",
    path: "/v1/payouts/:payout_id/statement/view",
    service: "payouts",
    operation: "page.payoutStatement",
    summary: "Hosted payout statement page",
  },
  { method: "GET", path: "/v1/invoices/:invoice_id/view", service: "invoicing", operation: "page.invoice", summary: "Hosted invoice page" },
];
