/** @treasury/client: the Platform Treasury API from TypeScript, with nothing but `fetch` and WebCrypto. */
export { createClient, type Args, type Body, type Method, type PathArgs, type Query, type TreasuryClient } from "./client.ts";
export { isTreasuryError, TreasuryConnectionError, TreasuryError, type ErrorCode, type ErrorEnvelope, type ErrorFamily } from "./errors.ts";
export { OPERATIONS, type OperationId } from "./generated/operations.ts";
export type { components, operations, paths } from "./generated/openapi.ts";
export { iterate, type PagingStyle } from "./paging.ts";
export { RESOURCES } from "./resources.ts";
export { DEFAULT_RETRY_POLICY, type RetryPolicy } from "./retry.ts";
export { API_VERSION, type ApiResponse, type CallOptions, type ClientOptions, type RequestInput } from "./transport.ts";
export {
  jwksFromUrl,
  verifyWebhook,
  WebhookVerificationError,
  type Ed25519Jwk,
  type Jwks,
  type JwksFromUrlOptions,
  type JwksSource,
  type VerifyWebhookOptions,
  type WebhookEvent,
  type WebhookVerificationReason,
} from "./webhooks.ts";
