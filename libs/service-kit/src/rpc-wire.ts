/**
 * What a kit RPC looks like on the wire, read and written by hand on the hot path: a request's JSON (checked
 * without the schema when it is well-formed), its NATS headers (written straight in wire format) and a reply's
 * JSON (a success's body cut out as text for a caller that passes it on). Anything unusual goes through the
 * schemas and the client library, so it fails exactly as they would. Batches: rpc-batch.ts.
 */
import { headers } from "@nats-io/transport-node";
import type { MsgHdrs } from "@nats-io/transport-node";
import { DomainError, ERROR_CODES, isErrorCode, NATS_HEADERS, RpcReplySchema, RpcRequest, SCOPES, validationProblem } from "@treasury/contracts";
import type { AuthContext, ErrorCode, RpcErrorBody, RpcReply } from "@treasury/contracts";
import type { z } from "zod";
import { BATCH_VERSION } from "./rpc-batch.ts";

// ---- Requests (read by the server) ----

/** A request's JSON; the payload of anything that is not JSON is the caller's validation_error. */
export function parseJson(msg: { json(): unknown }): unknown {
  try {
    return msg.json();
  } catch {
    throw new DomainError("validation_error", "RPC payload is not valid JSON");
  }
}

const SCOPE_SET: ReadonlySet<unknown> = new Set<unknown>(SCOPES);

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * The RpcRequest schema checked by hand for a well-formed request (every one the gateway sends): the same
 * data as the schema's output, or undefined for anything else, which the schema then decodes (and words
 * the error) as before.
 */
function decodeWellFormed(data: unknown): RpcRequest | undefined {
  if (!isPlainObject(data)) return undefined;
  const { auth: a, params, query, body, deadline, alt_base_url } = data;
  if (!isPlainObject(a) || !isPlainObject(params) || !isPlainObject(query)) return undefined;
  if (deadline !== undefined && typeof deadline !== "number") return undefined;
  if (alt_base_url !== undefined && typeof alt_base_url !== "string") return undefined;
  const { org_id, livemode, key_id, scopes, request_id } = a;
  if (typeof org_id !== "string" || typeof livemode !== "boolean" || typeof key_id !== "string" || typeof request_id !== "string") return undefined;
  if (scopes !== null) {
    if (!Array.isArray(scopes)) return undefined;
    for (const sc of scopes) if (!SCOPE_SET.has(sc)) return undefined;
  }
  for (const k in params) if (typeof params[k] !== "string") return undefined;
  const auth: AuthContext = { org_id, livemode, key_id, scopes: scopes as AuthContext["scopes"], request_id };
  const req: RpcRequest = { auth, params: params as Record<string, string>, query, body };
  if (deadline !== undefined) req.deadline = deadline;
  if (alt_base_url !== undefined) req.alt_base_url = alt_base_url;
  return req;
}

export function decodeRequest(msg: { json(): unknown }): RpcRequest {
  const data = parseJson(msg);
  const fast = decodeWellFormed(data);
  if (fast !== undefined) return fast;
  const parsed = RpcRequest.safeParse(data);
  if (!parsed.success) throw new DomainError("validation_error", "Malformed RPC request", { details: validationProblem(parsed.error).details });
  const { auth, params, query, body, deadline, alt_base_url } = parsed.data;
  return { auth, params, query, body, ...(deadline !== undefined ? { deadline } : {}), ...(alt_base_url !== undefined ? { alt_base_url } : {}) };
}

// ---- Replies ----

export function errorReply(code: ErrorCode, message?: string, opts: Omit<RpcErrorBody, "code" | "message"> = {}): RpcReply {
  return { ok: false, error: { code, message: message ?? ERROR_CODES[code].message, ...opts } };
}

/** A DomainError as a typed reply; absent optional fields are left out rather than sent as undefined. */
export function domainErrorReply(e: DomainError): RpcReply {
  return errorReply(e.code, e.message, {
    ...(e.hint !== undefined ? { hint: e.hint } : {}),
    ...(e.details !== undefined ? { details: e.details } : {}),
    ...(e.extra !== undefined ? { extra: e.extra } : {}),
  });
}

export type ErrorReply = Extract<RpcReply, { ok: false }>;

/** A success whose body is still the JSON text the service wrote (always an object: it starts with `{`). */
export type ForwardReply = { ok: true; status: number; bodyJson: string } | ErrorReply;

export const MALFORMED_REPLY = "Service answered with a malformed reply";

function normaliseReply(raw: z.infer<typeof RpcReplySchema>): RpcReply {
  if (raw.ok) return raw;
  const { code, message, hint, details, extra } = raw.error;
  return errorReply(isErrorCode(code) ? code : "internal_error", message, {
    ...(hint !== undefined ? { hint } : {}),
    ...(details !== undefined ? { details } : {}),
    ...(extra !== undefined ? { extra } : {}),
  });
}

/** A reply's JSON as a typed reply. Successes are checked by hand (the hot path); errors by the schema. */
function decodeReplyData(data: unknown): RpcReply {
  if (typeof data === "object" && data !== null) {
    const r = data as { ok?: unknown; status?: unknown; body?: unknown };
    if (r.ok === true) {
      const { status, body } = r;
      if (Number.isInteger(status) && typeof body === "object" && body !== null && !Array.isArray(body)) {
        return { ok: true, status: status as number, body: body as Record<string, unknown> };
      }
      return errorReply("internal_error", MALFORMED_REPLY);
    }
  }
  const parsed = RpcReplySchema.safeParse(data);
  return parsed.success ? normaliseReply(parsed.data) : errorReply("internal_error", MALFORMED_REPLY);
}

export function decodeReply(text: string): RpcReply {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    return errorReply("internal_error", MALFORMED_REPLY);
  }
  return decodeReplyData(data);
}

const OK_PREFIX = '{"ok":true,"status":';
const BODY_KEY = ',"body":{';
const STATUS_RE = /^[1-5]\d\d$/;

/**
 * A reply for a caller that passes the body on as JSON (the gateway): a kit service writes a success as
 * `{"ok":true,"status":NNN,"body":{…}}` (JSON.stringify keeps that key order), so the body's text is cut out
 * without parsing it and serialising it again. Anything else is decoded in full, as decodeReply does.
 */
export function decodeForward(text: string): ForwardReply {
  if (text.startsWith(OK_PREFIX) && text.endsWith("}}")) {
    const bodyAt = text.indexOf(BODY_KEY, OK_PREFIX.length);
    if (bodyAt !== -1 && STATUS_RE.test(text.slice(OK_PREFIX.length, bodyAt))) {
      return { ok: true, status: Number(text.slice(OK_PREFIX.length, bodyAt)), bodyJson: text.slice(bodyAt + BODY_KEY.length - 1, -1) };
    }
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    return errorReply("internal_error", MALFORMED_REPLY) as ErrorReply;
  }
  const r = decodeReplyData(data);
  return r.ok ? { ok: true, status: r.status, bodyJson: JSON.stringify(r.body) } : r;
}

// ---- Headers (written by the client) ----

const utf8 = new TextEncoder();

/**
 * The headers of an outgoing request, encoded straight to the wire format the client library writes
 * (`NATS/1.0\r\nKey: value\r\n…\r\n`): the library's MsgHdrs keeps a map of arrays, validates each key with
 * a MIME canonicalisation and each value with a regex, and builds the string on publish. Only set() (as the
 * propagator and rpcCall use it) and encode() (all that publish reads: nats-internals.ts) are needed here. A
 * value the library would refuse (CR or LF) goes through the library's headers so it fails the same way.
 */
export class RequestHeaders {
  private text = "NATS/1.0\r\n";
  private names: string[] = [];

  set(k: string, v: string): void {
    if (this.names.includes(k) || v.includes("\r") || v.includes("\n")) {
      // Rare (a key set twice, a value with a line break): the library's semantics exactly.
      const h = this.toLibrary();
      h.set(k, v);
      this.fromLibrary(h);
      return;
    }
    this.names.push(k);
    this.text += `${k}: ${v.trim()}\r\n`;
  }

  get(k: string): string {
    return this.toLibrary().get(k);
  }

  encode(): Uint8Array {
    // No header at all encodes as nothing, as the library's does.
    return this.names.length === 0 ? new Uint8Array(0) : utf8.encode(`${this.text}\r\n`);
  }

  /** The header lines as text, for a batch frame (rpc-batch.ts). */
  wire(): string {
    return this.text;
  }

  /** For the trace propagator, which sets headers through the library's type (set only). */
  asMsgHdrs(): MsgHdrs {
    return this as unknown as MsgHdrs;
  }

  private toLibrary(): MsgHdrs {
    const h = headers();
    for (const line of this.text.split("\r\n").slice(1)) {
      const i = line.indexOf(":");
      if (i > 0) h.append(line.slice(0, i), line.slice(i + 1).trim());
    }
    return h;
  }

  private fromLibrary(h: MsgHdrs): void {
    this.names = h.keys();
    this.text = "NATS/1.0\r\n";
    for (const k of this.names) for (const v of h.values(k)) this.text += `${k}: ${v}\r\n`;
  }
}

const BATCH_HEADER_BYTES = utf8.encode(`NATS/1.0\r\n${NATS_HEADERS.rpcBatch}: ${BATCH_VERSION}\r\n\r\n`);

/** The headers of a batch message itself (the requests' own headers travel in its frames). */
export const BATCH_HEADERS = { encode: (): Uint8Array => BATCH_HEADER_BYTES };
