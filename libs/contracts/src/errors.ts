/**
 * Every error code the API can answer, with its HTTP status and default message. This is the one table that
 * maps a domain error to HTTP: services raise codes, the gateway looks the status up here.
 */
export const ERROR_CODES = {
  // Envelope, protocol and auth (docs/api.md, Conventions).
  missing_api_key: { status: 401, message: "Missing API key" },
  invalid_api_key: { status: 401, message: "Invalid API key" },
  ledger_suspended: { status: 403, message: "Ledger suspended" },
  insufficient_scope: { status: 403, message: "Insufficient scope" },
  step_up_required: { status: 403, message: "Recent re-authentication required" },
  recent_login_required: { status: 403, message: "Login within the last few minutes required" },
  // The spec's table spells this one with a trailing "l"; accepted as an alias so clients matching it work.
  recent_login_requiredl: { status: 403, message: "Login within the last few minutes required" },
  sandbox_only: { status: 403, message: "This operation is available with sandbox (test) keys only" },
  invalid_json: { status: 400, message: "Request body is not valid JSON" },
  validation_error: { status: 400, message: "Request validation failed" },
  invalid_limit: { status: 400, message: "Paging parameter out of range" },
  amount_too_large: { status: 400, message: "Amount exceeds the maximum of 100,000,000,000 cents" },
  unsupported_version: { status: 400, message: "Unsupported Service-Version" },
  route_not_found: { status: 404, message: "Route not found" },
  method_not_allowed: { status: 405, message: "Method not allowed" },
  payload_too_large: { status: 413, message: "Request body too large" },
  unsupported_media_type: { status: 415, message: "Content-Type must be application/json" },
  // Answered at the connection, before a request exists: a request line and headers over the server's limit, a
  // request that is not HTTP, or one whose headers did not arrive in time.
  headers_too_large: { status: 431, message: "The request line and headers exceed the size limit" },
  malformed_request: { status: 400, message: "The request is not valid HTTP" },
  request_timeout: { status: 408, message: "The request did not arrive in time" },
  rate_limited: { status: 429, message: "Rate limit exceeded" },
  auth_rate_limited: { status: 429, message: "Too many failed authentication attempts" },
  internal_error: { status: 500, message: "Internal server error" },
  not_implemented: { status: 501, message: "Operation not implemented yet" },
  maintenance: { status: 503, message: "Service under maintenance" },
  service_unavailable: { status: 503, message: "Service unavailable; retry with the same idempotency key" },
  service_timeout: { status: 504, message: "Service did not answer in time; the outcome is unknown, retry with the same key" },

  // Idempotency.
  duplicate_reference_id: { status: 409, message: "A transaction with this reference_id exists" },
  idempotency_conflict: { status: 409, message: "This idempotency key was used with a different request" },
  duplicate_refund_reference: { status: 409, message: "A refund with this reference was already processed" },
  duplicate_reversal_reference: { status: 409, message: "The transaction was already reversed" },

  // Participants and wallets (docs/api.md, Participants; Wallets; Wallet sessions and shared spend).
  participant_not_found: { status: 404, message: "Participant not found" },
  participant_already_exists: { status: 409, message: "A participant with this id exists with different fields" },
  wallet_not_found: { status: 404, message: "Wallet not found" },
  creator_earnings_requires_participant: { status: 409, message: "creator_earnings wallets are created with their participant" },
  wallet_not_topupable: { status: 400, message: "Wallet does not support top-ups" },
  wallet_not_redeemable: { status: 400, message: "Wallet is not redeemable" },
  wallet_withdrawal_not_supported: { status: 400, message: "Creator earnings leave through payouts" },
  wallet_not_transferable: { status: 400, message: "Wallet does not permit transfers" },
  wallet_not_active: { status: 422, message: "Wallet is not active" },
  transfer_to_self: { status: 400, message: "Cannot transfer a wallet to itself" },
  topup_requires_checkout: { status: 422, message: "Live top-ups go through hosted checkout" },
  insufficient_balance: { status: 422, message: "Insufficient balance" },
  wallet_session_not_found: { status: 404, message: "Wallet session not found" },
  wallet_session_expired: { status: 410, message: "Wallet session expired" },

  // Holds (docs/api.md, Holds and transfers).
  hold_not_found: { status: 404, message: "Hold not found" },
  hold_not_ready: { status: 409, message: "Hold is not ready for release" },
  clock_backwards: { status: 400, message: "A sandbox clock only moves forward" },
  hold_already_released: { status: 409, message: "Hold was already released" },

  // Checkout (docs/api.md, Checkout).
  checkout_session_not_found: { status: 404, message: "Checkout session not found" },
  checkout_not_pending: { status: 409, message: "Checkout session is not pending" },
  checkout_in_progress: { status: 409, message: "Checkout session completion is in progress" },
  checkout_expired: { status: 409, message: "Checkout session expired" },
  card_declined: { status: 422, message: "Card declined" },
  rail_not_enabled: { status: 422, message: "Payment rail not enabled" },
  provider_not_configured: { status: 422, message: "Payment provider not configured" },
  processor_signature_invalid: { status: 400, message: "Processor webhook signature verification failed" },
  processor_refund_failed: { status: 422, message: "The card processor could not refund the payment" },

  // Payouts, KYC (docs/api.md, Payouts; KYC).
  payout_not_found: { status: 404, message: "Payout not found" },
  payout_not_eligible: { status: 422, message: "Participant is not eligible for payouts" },
  kyc_not_found: { status: 404, message: "Verification not found" },
  kyb_not_approved: { status: 403, message: "Live keys require an approved business verification" },
  fees_exceed_amount: { status: 400, message: "Fees must be less than the payout amount" },
  invalid_routing_number: { status: 400, message: "Routing number is not a valid ABA routing number" },
  bank_account_not_found: { status: 404, message: "No bank account is set up for this participant" },
  wallet_payout_not_supported: { status: 400, message: "Only creator earnings wallets pay out" },
  participant_wallet_mismatch: { status: 400, message: "wallet_id is not the participant's creator earnings wallet" },

  // Refunds, receipts, ledger records (docs/api.md, Refunds and refund requests; Receipts; Transactions and accounting).
  original_sale_not_found: { status: 404, message: "Original sale not found" },
  sale_already_reversed: { status: 409, message: "Reversed sale cannot be refunded" },
  sale_already_fully_refunded: { status: 409, message: "No further refund possible" },
  refund_amount_exceeds_remaining: { status: 409, message: "Refund amount exceeds the remaining refundable amount" },
  reversal_amount_exceeds_remaining: { status: 409, message: "Reversal amount exceeds the transaction's unreversed amount" },
  bill_amount_exceeds_unpaid: { status: 409, message: "Payment exceeds the bill's unpaid amount" },
  refund_request_not_found: { status: 404, message: "Refund request not found" },
  refund_not_found: { status: 404, message: "Refund not found" },
  invalid_state_transition: { status: 409, message: "Illegal state transition" },
  receipt_not_found: { status: 404, message: "Receipt not found" },
  transaction_not_found: { status: 404, message: "Transaction not found" },
  account_not_found: { status: 404, message: "Account not found" },
  bill_not_found: { status: 404, message: "Bill not found" },
  invalid_signature: { status: 400, message: "Signature does not verify" },
  invalid_public_key: { status: 400, message: "public_key_jwk must be a public ES256 (P-256) or EdDSA (Ed25519) JWK" },
  signed_payload_mismatch: { status: 400, message: "signed_payload must be the proof's receipt_hash" },
  duplicate_signature: { status: 409, message: "A signature with this key_id exists on this proof" },
  transaction_not_a_sale: { status: 400, message: "The transaction does not record a sale" },
  receipt_sale_mismatch: { status: 400, message: "checkout_id and sale_transaction_id name different sales" },
  checkout_not_completed: { status: 409, message: "The checkout session has no sale yet" },
  unsupported_format: { status: 400, message: "Unsupported or unrecognised statement format" },
  template_not_found: { status: 404, message: "Import template not found" },
  unparseable_statement: { status: 400, message: "The statement cannot be read" },
  empty_statement: { status: 400, message: "The statement is empty" },
  binary_statement: { status: 400, message: "The statement is binary data, not text; send text, or base64 with data_encoding" },
  invalid_base64: { status: 400, message: "data is not valid base64" },
  unsupported_encoding: { status: 400, message: "Unsupported character encoding" },
  statement_too_large: { status: 400, message: "The statement is too large" },
  statement_too_complex: { status: 422, message: "The statement took longer to read than its time budget allows" },
  mapping_required: { status: 400, message: "CSV statements need a mapping or a template_id" },
  invalid_mapping: { status: 400, message: "The CSV mapping is invalid" },
  mapping_column_not_found: { status: 400, message: "The CSV mapping names a column the file does not have" },
  bank_line_not_found: { status: 404, message: "Bank line not found" },
  bank_line_already_matched: { status: 409, message: "The bank line is already matched" },
  transaction_already_matched: { status: 409, message: "The transaction is already matched to a bank line" },
  match_not_found: { status: 404, message: "Reconciliation match not found" },

  // Webhooks (docs/api.md, Webhooks).
  webhook_endpoint_not_found: { status: 404, message: "Webhook endpoint not found" },
  webhook_delivery_not_found: { status: 404, message: "Webhook delivery not found" },
  invalid_webhook_url: { status: 400, message: "Webhook URL not allowed" },

  // Risk (docs/api.md, Risk). A movement a hard policy denied: the caller's answer names the evaluation (`evaluation_id`).
  risk_denied: { status: 422, message: "Denied by a risk policy" },
  risk_unavailable: { status: 503, message: "Risk checks did not answer in time; nothing was moved" },
  policy_not_found: { status: 404, message: "Fraud policy not found" },
  policy_limit_reached: { status: 409, message: "The org has as many policies as it may have in this environment" },
  evaluation_not_found: { status: 404, message: "Risk evaluation not found" },
  alert_config_not_found: { status: 404, message: "Alert configuration not found" },
  alert_delivery_failed: { status: 422, message: "The test alert could not be delivered" },

  // The operator console (docs/operations.md, "The operator console"; never on the public API).
  operator_exists: { status: 409, message: "An operator with this email exists" },
  sign_in_failed: { status: 401, message: "The email or password is wrong" },
  sign_in_locked: { status: 429, message: "Too many failed sign-ins; try again later" },
  console_session_required: { status: 401, message: "Sign in to the operator console" },
  csrf_token_invalid: { status: 403, message: "The form's security token is missing or stale; reload the page" },
  operator_role_forbidden: { status: 403, message: "Your operator role may not do this" },

  // Invoicing (docs/api.md, Invoicing).
  invoice_not_found: { status: 404, message: "Invoice not found" },
  invoice_line_items_required: { status: 400, message: "An invoice needs at least one line item" },
  invalid_quantity: { status: 400, message: "Quantity must be positive, with at most four decimal places" },
  invoice_not_sent: { status: 409, message: "The invoice has not been sent" },
  invoice_already_sent: { status: 409, message: "The invoice has already been sent" },
  invoice_paid: { status: 409, message: "The invoice is paid" },
  invoice_void: { status: 409, message: "The invoice is void" },
  invoice_has_payments: { status: 409, message: "The invoice has payments recorded against it" },
  payment_exceeds_amount_due: { status: 409, message: "Payment exceeds the invoice's amount due" },
  // Tax (docs/api.md, Tax). A TIN's value never appears in a message or a detail.
  invalid_tin: { status: 400, message: "Invalid taxpayer identification number" },
  invalid_tax_year: { status: 400, message: "Invalid tax year" },
  tax_year_not_ended: { status: 422, message: "The tax year has not ended" },
  tax_profile_not_found: { status: 404, message: "Tax profile not found" },
  tax_document_not_found: { status: 404, message: "Tax document not found" },
  tax_generation_not_found: { status: 404, message: "Tax generation not found" },
  tax_export_not_found: { status: 404, message: "Tax export not found" },
  tax_export_part_not_found: { status: 404, message: "Tax export part not found" },
  tax_export_not_ready: { status: 409, message: "Tax export is still being written" },
  tax_summary_not_found: { status: 404, message: "No tax documents for that year" },
  tax_document_state: { status: 409, message: "The tax document is not in a state that allows this" },
  export_too_large: { status: 422, message: "The export is larger than one answer may be" },
} as const satisfies Record<string, { status: number; message: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;

export function isErrorCode(code: string): code is ErrorCode {
  return Object.prototype.hasOwnProperty.call(ERROR_CODES, code);
}

export function statusForCode(code: string): number {
  return isErrorCode(code) ? ERROR_CODES[code].status : 500;
}

/** One validation problem: the path into the body or query, and what is wrong there. */
export interface ValidationDetail {
  path: string;
  message: string;
}

/**
 * A domain error: a stable code, no HTTP knowledge. Services throw it; the RPC layer turns it into a typed
 * reply; the gateway maps the code to a status once. `extra` carries named resources for 409 answers
 * (`existing_transaction_id`, the existing resource under its key).
 */
export class DomainError extends Error {
  readonly code: ErrorCode;
  readonly hint: string | undefined;
  readonly details: ValidationDetail[] | undefined;
  readonly extra: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message?: string, opts: { hint?: string; details?: ValidationDetail[]; extra?: Record<string, unknown> } = {}) {
    super(message ?? ERROR_CODES[code].message);
    this.name = "DomainError";
    this.code = code;
    this.hint = opts.hint;
    this.details = opts.details;
    this.extra = opts.extra;
  }
}
