/**
 * One logical call of one operation: the URL from the operation's path, the API key and version headers, a replay
 * key fixed before the first attempt and sent unchanged on every retry, bounded retries on the answers that ask
 * for one, and the answer as the success envelope or a `TreasuryError`.
 */
import { TreasuryConnectionError, TreasuryError, toErrorEnvelope, type ErrorEnvelope } from "./errors.ts";
import { OPERATIONS, type OperationId } from "./generated/operations.ts";
import { backoffMs, DEFAULT_RETRY_POLICY, outcomeOf, retryAfterMs, sleep, type RetryPolicy } from "./retry.ts";

/** The API version this client was generated against; sent as `Service-Version` unless another is pinned. */
export const API_VERSION = "2026-03-01";

export interface ClientOptions {
  apiKey: string;
  /** Default `http://127.0.0.1:8080` (what `npm start` serves). */
  baseUrl?: string;
  /** The `Service-Version` to pin. */
  version?: string;
  retry?: Partial<RetryPolicy>;
  /** Per attempt; an attempt that runs longer is abandoned and counts as a lost connection. Default 35 s. */
  timeoutMs?: number;
  fetch?: typeof fetch;
  /** Seams for tests: how a wait happens, where jitter comes from, how a replay key is made. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  random?: () => number;
  newIdempotencyKey?: () => string;
  now?: () => number;
}

export interface CallOptions {
  /** The replay key of an `idempotency_key` operation; by default one is made for the call. */
  idempotencyKey?: string;
  signal?: AbortSignal;
  /** Overrides the client's `retry.maxAttempts` for this call (1: no retry). */
  maxAttempts?: number;
  headers?: Record<string, string>;
}

/** A success envelope: `{success: true, request_id, <named key>: …}`; `idempotent: true` marks a replay. */
export interface ApiResponse {
  success: true;
  request_id: string;
  idempotent?: boolean;
  [key: string]: unknown;
}

export interface RequestInput {
  path: string[];
  query?: Record<string, unknown> | undefined;
  body?: Record<string, unknown> | undefined;
}

/**
 * POSTs that repeat safely without a replay key in the body: each is idempotent by what it names (a participant by
 * its id, a wallet by its owner, a receipt by its sale, a release by its hold, an import by its lines) or reads only.
 */
const REPEATABLE_POSTS: ReadonlySet<OperationId> = new Set<OperationId>([
  "createParticipant",
  "createWallet",
  "generateReceipt",
  "verifyReceiptProof",
  "generateReport",
  "importTransactions",
  "releaseHold",
]);

/**
 * `idempotency_key` operations whose key, when absent, the server derives from the request itself (a refund from
 * its sale, amount and external id; a reversal from its transaction and amount): a key made here would make two
 * identical requests two refunds, where the server's own key makes them one. Their retries are safe without one.
 */
const SERVER_DERIVED_KEY: ReadonlySet<OperationId> = new Set<OperationId>(["createRefund", "reverseTransaction"]);

/** A 409 that, after an attempt whose outcome was unknown, is the answer of that attempt: the same request done. */
const REPLAY_CONFLICTS: ReadonlySet<string> = new Set(["duplicate_reference_id", "hold_already_released", "duplicate_reversal_reference"]);

function repeatable(id: OperationId): boolean {
  const op = OPERATIONS[id];
  return op.method !== "POST" || op.replayKey !== null || REPEATABLE_POSTS.has(id);
}

function defaultIdempotencyKey(): string {
  return `idk_${globalThis.crypto.randomUUID().replace(/-/g, "")}`;
}

function buildUrl(baseUrl: string, template: string, params: string[], query: Record<string, unknown> | undefined): string {
  let i = 0;
  const path = template.replace(/\{[A-Za-z_]+\}/g, () => {
    const v = params[i++];
    if (v === undefined || v === "") throw new TypeError(`${template}: a path parameter is missing`);
    return encodeURIComponent(v);
  });
  const search = new URLSearchParams();
  for (const [k, v] of Object.entries(query ?? {})) {
    if (v === undefined || v === null) continue;
    for (const item of Array.isArray(v) ? v : [v]) search.append(k, String(item));
  }
  const qs = search.toString();
  return `${baseUrl.replace(/\/+$/, "")}${path}${qs === "" ? "" : `?${qs}`}`;
}

/**
 * The answer's body. A JSON body is the envelope; anything else is a file an operation sends outside it (a payout
 * statement as CSV), answered as `{success, request_id, file: {content_type, content}}`.
 */
async function readBody(res: Response): Promise<unknown> {
  const text = await res.text();
  const type = res.headers.get("content-type") ?? "";
  if (type.includes("json")) {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      // Not JSON after all: answered below as the file it is.
    }
  }
  return { success: res.ok, request_id: res.headers.get("x-request-id") ?? "", file: { content_type: type, content: text } };
}

type Attempt = { kind: "answer"; status: number; body: unknown; headers: Headers } | { kind: "lost"; error: unknown };

export class Transport {
  private readonly baseUrl: string;
  private readonly policy: RetryPolicy;
  private readonly fetchFn: typeof fetch;
  private readonly sleepFn: (ms: number, signal?: AbortSignal) => Promise<void>;
  private readonly random: () => number;
  private readonly newKey: () => string;
  private readonly now: () => number;

  constructor(private readonly options: ClientOptions) {
    this.baseUrl = options.baseUrl ?? "http://127.0.0.1:8080";
    this.policy = { ...DEFAULT_RETRY_POLICY, ...options.retry };
    this.fetchFn = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.sleepFn = options.sleep ?? sleep;
    this.random = options.random ?? Math.random;
    this.newKey = options.newIdempotencyKey ?? defaultIdempotencyKey;
    this.now = options.now ?? Date.now;
  }

  /** Sends one logical call; the replay key is chosen here, once, before the first attempt. */
  async call(id: OperationId, input: RequestInput, opts: CallOptions = {}): Promise<ApiResponse> {
    const op = OPERATIONS[id];
    let body = input.body;
    if (op.replayKey === "idempotency_key" && body?.["idempotency_key"] === undefined) {
      const key = opts.idempotencyKey ?? (SERVER_DERIVED_KEY.has(id) ? undefined : this.newKey());
      if (key !== undefined) body = { ...body, idempotency_key: key };
    }
    const replayKey = typeof body?.[op.replayKey ?? ""] === "string" ? (body?.[op.replayKey ?? ""] as string) : undefined;
    const url = buildUrl(this.baseUrl, op.path, input.path, input.query);
    const init = this.requestInit(op.method, body, opts);
    const maxAttempts = Math.max(1, opts.maxAttempts ?? this.policy.maxAttempts);
    let unknownSeen = false;
    for (let attempt = 1; ; attempt++) {
      const result = await this.attempt(url, init, opts.signal);
      if (result.kind === "lost") {
        if (opts.signal?.aborted) throw opts.signal.reason;
        if (attempt >= maxAttempts || !repeatable(id)) {
          throw new TreasuryConnectionError(`${op.method} ${op.path}: no answer after ${attempt} attempt(s)`, attempt, replayKey, result.error);
        }
        unknownSeen = true;
        await this.sleepFn(backoffMs(this.policy, attempt, this.random), opts.signal);
        continue;
      }
      if (result.status < 400) return result.body as ApiResponse;
      const envelope = toErrorEnvelope(result.status, result.body);
      if (result.status === 409 && unknownSeen && REPLAY_CONFLICTS.has(envelope.error_code)) return asReplay(envelope);
      const wait = this.retryWait(id, result, envelope, attempt, maxAttempts);
      if (wait === null) {
        const retryAfter = secondsOf(retryAfterMs(result.headers.get("retry-after"), envelope.retry_after, this.now()));
        throw new TreasuryError(result.status, envelope, attempt, retryAfter, replayKey);
      }
      if (outcomeOf(result.status, envelope.error_code) === "unknown") unknownSeen = true;
      await this.sleepFn(wait, opts.signal);
    }
  }

  /** Milliseconds to wait before the next attempt, or null when this answer is final. */
  private retryWait(id: OperationId, result: { status: number; headers: Headers }, envelope: ErrorEnvelope, attempt: number, max: number): number | null {
    const outcome = outcomeOf(result.status, envelope.error_code);
    if (outcome === null || attempt >= max) return null;
    if (outcome === "unknown" && !repeatable(id)) return null;
    const after = retryAfterMs(result.headers.get("retry-after"), envelope.retry_after, this.now());
    if (after !== undefined && after > this.policy.maxRetryAfterMs) return null;
    return backoffMs(this.policy, attempt, this.random, after);
  }

  private requestInit(method: string, body: Record<string, unknown> | undefined, opts: CallOptions): RequestInit {
    const headers: Record<string, string> = {
      accept: "application/json",
      "x-api-key": this.options.apiKey,
      "service-version": this.options.version ?? API_VERSION,
      ...opts.headers,
    };
    if (body !== undefined) headers["content-type"] = "application/json";
    return { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) };
  }

  private async attempt(url: string, init: RequestInit, signal: AbortSignal | undefined): Promise<Attempt> {
    const timeout = AbortSignal.timeout(this.options.timeoutMs ?? 35_000);
    const combined = signal ? AbortSignal.any([signal, timeout]) : timeout;
    try {
      const res = await this.fetchFn(url, { ...init, signal: combined });
      return { kind: "answer", status: res.status, body: await readBody(res), headers: res.headers };
    } catch (error) {
      return { kind: "lost", error };
    }
  }
}

function secondsOf(ms: number | undefined): number | undefined {
  return ms === undefined ? undefined : Math.ceil(ms / 1000);
}

/**
 * The 409 of a `reference_id` operation names the existing resource under its key: after a lost answer it is this
 * call's own first outcome, so it is answered as a replay (`idempotent: true`), as an `idempotency_key` replay is.
 */
function asReplay(envelope: ErrorEnvelope): ApiResponse {
  const { success: _success, error: _error, ...rest } = envelope;
  return { ...rest, success: true, idempotent: true };
}
