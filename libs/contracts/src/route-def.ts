/** The shape of one public operation in the route table (routes.ts), and the body limits it refers to. */
import type { z } from "zod";
import type { Scope } from "./auth.ts";
import type { ServiceName } from "./rpc.ts";

export type RateClass = "read" | "record_sale" | "treasury_write" | "write";
export type HttpMethod = "GET" | "POST" | "PUT" | "DELETE";

export interface RouteDef {
  operation: string;
  method: HttpMethod;
  /** Fastify-style path (`:param`). */
  path: string;
  service: Exclude<ServiceName, "gateway"> | "gateway";
  /** Required scope; `null` means the route takes no API key (health, JWKS). */
  scope: Scope | null;
  rateClass: RateClass;
  summary: string;
  body?: z.ZodType;
  query?: z.ZodType;
  /** Body limit in bytes (default 64 KiB). */
  bodyLimitBytes?: number;
  /** Answered with 201 on success when the service says created. */
  creates?: boolean;
  /**
   * The body is forwarded as received (`ProcessorWebhookBody`: its bytes in base64 and this header's value), not
   * parsed into a schema: a signature over the exact bytes is checked by the owning service.
   */
  rawBody?: { signatureHeader: string };
  /**
   * The service may answer a file instead of a JSON body (`{file: FileAnswer}`, e.g. `?format=csv`): the gateway
   * sends its content with its type, outside the envelope.
   */
  fileResponse?: true;
  /** The `Cache-Control` of a successful answer (a public, rarely changing document: a JWKS). */
  cacheControl?: string;
}

/** A file a service answers for a `fileResponse` route: sent as is, with this type and download name. */
export interface FileAnswer {
  content_type: string;
  filename: string;
  content: string;
  /** `base64`: `content` is the file's bytes in base64 (a PDF); absent: the file is this text. */
  encoding?: "base64";
}

export const BODY_LIMIT_BYTES = 64 * 1024;
export const IMPORT_BODY_LIMIT_BYTES = 1024 * 1024;
/** A processor's event (a checkout session with its line items, a dispute with its evidence) can exceed 64 KiB. */
export const PROCESSOR_WEBHOOK_BODY_LIMIT_BYTES = 256 * 1024;
/**
 * Room kept under NATS's 1 MiB max_payload for what the gateway adds around a body (auth context, deadline,
 * headers): a body within this much of 1 MiB would make a request NATS refuses, so it is a 413 instead.
 */
export const RPC_ENVELOPE_BYTES_MAX = 16 * 1024;
