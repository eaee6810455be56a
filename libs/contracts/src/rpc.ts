import { z } from "zod";
import { AuthContext } from "./auth.ts";
import type { ErrorCode, ValidationDetail } from "./errors.ts";

export const SERVICES = ["gateway", "ledger", "payments", "payouts", "refunds", "receipts", "kyc", "webhooks", "risk", "invoicing", "tax", "console"] as const;
export type ServiceName = (typeof SERVICES)[number];
/** Services that answer RPCs (the gateway only sends them). */
export const BACKEND_SERVICES = SERVICES.filter((s) => s !== "gateway") as Exclude<ServiceName, "gateway">[];

/** Default deadline of one RPC; the gateway answers 504 after it. */
export const RPC_TIMEOUT_MS = 10_000;

/** `svc.<service>.<operation>`, under the deployment's subject prefix (tests use one prefix per file). */
export function rpcSubject(prefix: string, service: string, operation: string): string {
  return `${prefix}svc.${service}.${operation}`;
}

export function healthSubject(prefix: string, service: string): string {
  return `${prefix}svc.${service}._health`;
}

/** What the gateway forwards for a public operation. */
export const RpcRequest = z.object({
  auth: AuthContext,
  params: z.record(z.string(), z.string()),
  query: z.record(z.string(), z.unknown()),
  body: z.unknown(),
  /** Absolute deadline (ms since epoch): work not started by then is pointless, the caller has given up. */
  deadline: z.number().optional(),
  /** Public base URL of the gateway's alt listener, for browser-visible links (checkout_url, wallet_url…). */
  alt_base_url: z.string().optional(),
  /** The client's address as the gateway sees it (TRUST_PROXY): what risk's velocity by ip counts. */
  client_ip: z.string().optional(),
});
export type RpcRequest<B = unknown, Q = Record<string, unknown>> = {
  auth: AuthContext;
  params: Record<string, string>;
  query: Q;
  body: B;
  deadline?: number;
  alt_base_url?: string;
  client_ip?: string;
};

/**
 * What the gateway forwards for a hosted page (alt listener, no API key: the unguessable id in the URL is the
 * authorisation). Reply body: `{ html: string }` (status from the reply) or `{ redirect: string }` (303).
 */
export const PageRequest = z.object({
  params: z.record(z.string(), z.string()),
  query: z.record(z.string(), z.unknown()),
  form: z.record(z.string(), z.string()),
  request_id: z.string(),
  client_ip: z.string(),
  alt_base_url: z.string(),
});
export type PageRequest = z.infer<typeof PageRequest>;

export interface RpcErrorBody {
  code: ErrorCode;
  message: string;
  hint?: string;
  details?: ValidationDetail[];
  extra?: Record<string, unknown>;
}

/** Reply: a result (status + named-key body) or a typed error. */
export type RpcReply = { ok: true; status: number; body: Record<string, unknown> } | { ok: false; error: RpcErrorBody };

export const RpcReplySchema = z.union([
  z.object({ ok: z.literal(true), status: z.number().int(), body: z.record(z.string(), z.unknown()) }),
  z.object({
    ok: z.literal(false),
    error: z.object({
      code: z.string(),
      message: z.string(),
      hint: z.string().optional(),
      details: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
      extra: z.record(z.string(), z.unknown()).optional(),
    }),
  }),
]);

/** Header names carried on NATS messages. */
export const NATS_HEADERS = {
  requestId: "x-request-id",
  traceparent: "traceparent",
  tracestate: "tracestate",
  msgId: "Nats-Msg-Id",
  /** On a message that carries several RPC requests (service-kit's batch framing), its format version. */
  rpcBatch: "rpc-batch",
} as const;
