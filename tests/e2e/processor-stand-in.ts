/**
 * A loopback stand-in of the card processor's HTTP API (the calls payments makes, answered in the processor's
 * documented response shapes, including its error shape and a request that never answers), and builders of the
 * processor's events signed with the official library's test-header helper, as the processor signs them.
 */
import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import Stripe from "stripe";

export interface SeenRequest {
  method: string;
  path: string;
  form: URLSearchParams;
  headers: IncomingMessage["headers"];
}

type Fault = { status: number; body: unknown } | "hang";

export interface ProcessorStandIn {
  url: string;
  seen: SeenRequest[];
  /** The fee the processor charges on every payment, in cents. */
  fee: number;
  /** Status new refunds are created with (`pending` by default, as card refunds often start). */
  refundStatus: string;
  /** Answers the next requests to a path prefix with these faults, in order, before answering normally again. */
  fail(pathPrefix: string, ...faults: Fault[]): void;
  /** Sets what a checkout session reads back as (paid, expired) without any event being sent. */
  setSession(id: string, fields: Record<string, unknown>): void;
  /** Sets what a refund reads back as (for `charge.refunded` without its refunds listed). */
  setRefund(id: string, fields: Record<string, unknown>): void;
  refund(id: string): Record<string, unknown> | undefined;
  close(): Promise<void>;
}

export const rid = (prefix: string) => `${prefix}_${randomBytes(9).toString("hex")}`;

/** The processor session each of our references (client_reference_id) was given, for events built about it. */
const sessionOfReference = new Map<string, string>();

function errorBody(status: number, message: string, code?: string) {
  return {
    status,
    body: { error: { type: status === 400 || status === 404 ? "invalid_request_error" : "api_error", message, ...(code !== undefined ? { code } : {}) } },
  };
}
export const processorError = errorBody;

/** `metadata[key]=value` fields of a form-encoded request, as the processor stores them. */
function metadataOf(form: URLSearchParams): Record<string, string> {
  const metadata: Record<string, string> = {};
  for (const [k, v] of form) {
    const m = /^metadata\[(.+)\]$/.exec(k);
    if (m?.[1] !== undefined) metadata[m[1]] = v;
  }
  return metadata;
}

/** What the stand-in knows: the requests it saw, the faults still to answer, and the objects it made. */
interface StandInState {
  seen: SeenRequest[];
  faults: { prefix: string; fault: Fault }[];
  refunds: Map<string, Record<string, unknown>>;
  sessions: Map<string, Record<string, unknown>>;
  refundByKey: Map<string, string>;
  fee: number;
  refundStatus: string;
}

/** A request as the stand-in routes it: method, path, form (the query of a GET) and headers. */
interface StandInRequest {
  method: string;
  path: string;
  form: URLSearchParams;
  headers: IncomingMessage["headers"];
}

/** An answer to write, or "hang" for a request that never gets one. */
type Reply = { status: number; body: unknown } | "hang";

export async function startProcessorStandIn(): Promise<ProcessorStandIn> {
  const state: StandInState = {
    seen: [],
    faults: [],
    refunds: new Map(),
    sessions: new Map(),
    refundByKey: new Map(),
    fee: 0,
    refundStatus: "pending",
  };
  const hanging: ServerResponse[] = [];
  const server = createServer((req, res) => {
    let text = "";
    req.on("data", (d: Buffer) => (text += d.toString()));
    req.on("end", () => {
      const url = new URL(req.url ?? "/", "http://stand-in");
      const request = {
        method: req.method ?? "",
        path: url.pathname,
        form: new URLSearchParams(req.method === "GET" ? url.search : text),
        headers: req.headers,
      };
      state.seen.push(request);
      const reply = faultFor(state, request.path) ?? route(state, request);
      if (reply === "hang") return void hanging.push(res);
      res.writeHead(reply.status, { "content-type": "application/json", "request-id": rid("req") });
      res.end(JSON.stringify(reply.body));
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  return standInHandle(`http://127.0.0.1:${port}`, state, async () => {
    for (const h of hanging) h.destroy();
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  });
}

/** The first fault set for a prefix of `path`, taken off the list; undefined when none is. */
function faultFor(state: StandInState, path: string): Reply | undefined {
  const f = state.faults.findIndex((x) => path.startsWith(x.prefix));
  return f >= 0 ? state.faults.splice(f, 1)[0]!.fault : undefined;
}

/** The processor's answer to a request of its API, as the documented shapes have it. */
function route(state: StandInState, req: StandInRequest): Reply {
  const { method, path, form } = req;
  if (method === "POST" && path === "/v1/checkout/sessions") return createSession(state, req);
  const cs = /^\/v1\/checkout\/sessions\/([^/]+)$/.exec(path);
  if (method === "GET" && cs !== null) return readSession(state, cs[1] ?? "", form);
  const pi = /^\/v1\/payment_intents\/([^/]+)$/.exec(path);
  if (method === "GET" && pi !== null) return { status: 200, body: paymentIntent(state, pi[1] ?? "") };
  if (method === "POST" && path === "/v1/refunds") return createRefund(state, req);
  const rf = /^\/v1\/refunds\/([^/]+)$/.exec(path);
  if (method === "GET" && rf !== null) {
    const r = state.refunds.get(rf[1] ?? "");
    return r === undefined ? errorBody(404, "No such refund", "resource_missing") : { status: 200, body: r };
  }
  return errorBody(404, `Unrecognized request URL (${method} ${path})`);
}

function paymentIntent(state: StandInState, id: string) {
  return {
    id,
    object: "payment_intent",
    status: "succeeded",
    latest_charge: {
      id: `ch_${id}`,
      object: "charge",
      balance_transaction: { id: `txn_${id}`, object: "balance_transaction", fee: state.fee, amount: 0, net: 0 },
    },
  };
}

function createSession(state: StandInState, { form, headers }: StandInRequest): Reply {
  const id = rid("cs_test");
  const session = {
    id,
    object: "checkout.session",
    url: `https://checkout.stand-in.test/c/pay/${id}`,
    client_reference_id: form.get("client_reference_id"),
    amount_total: Number(form.get("line_items[0][price_data][unit_amount]")),
    currency: form.get("line_items[0][price_data][currency]"),
    payment_status: "unpaid",
    status: "open",
    mode: "payment",
    metadata: metadataOf(form),
    payment_intent: null,
    // The processor's mode is its key's: a live-mode key's sessions are live, a test-mode key's are not.
    livemode: /^Bearer (sk|rk)_live_/.test(String(headers.authorization ?? "")),
  };
  state.sessions.set(id, session);
  const reference = form.get("client_reference_id");
  if (reference !== null) sessionOfReference.set(reference, id);
  return { status: 200, body: session };
}

function readSession(state: StandInState, id: string, form: URLSearchParams): Reply {
  const session = state.sessions.get(id);
  if (session === undefined) return errorBody(404, "No such checkout.session", "resource_missing");
  const pi = session["payment_intent"];
  const expand = form.getAll("expand[0]").includes("payment_intent.latest_charge.balance_transaction");
  return { status: 200, body: typeof pi === "string" && expand ? { ...session, payment_intent: paymentIntent(state, pi) } : session };
}

function createRefund(state: StandInState, { form, headers }: StandInRequest): Reply {
  const key = String(headers["idempotency-key"] ?? "");
  const known = state.refundByKey.get(key);
  if (known !== undefined) return { status: 200, body: state.refunds.get(known) };
  const id = rid("re_proc");
  const metadata = metadataOf(form);
  const refund = {
    id,
    object: "refund",
    amount: Number(form.get("amount")),
    currency: "usd",
    payment_intent: form.get("payment_intent"),
    status: state.refundStatus,
    metadata,
  };
  state.refunds.set(id, refund);
  state.refundByKey.set(key, id);
  return { status: 200, body: refund };
}

/** What a test holds of the stand-in: its state to read and set, faults to queue, and `close`. */
function standInHandle(url: string, state: StandInState, close: () => Promise<void>): ProcessorStandIn {
  return {
    url,
    seen: state.seen,
    get fee() {
      return state.fee;
    },
    set fee(v: number) {
      state.fee = v;
    },
    get refundStatus() {
      return state.refundStatus;
    },
    set refundStatus(v: string) {
      state.refundStatus = v;
    },
    fail: (prefix, ...fs) => {
      for (const fault of fs) state.faults.push({ prefix, fault });
    },
    setSession: (id, fields) => {
      const session = state.sessions.get(id);
      if (session === undefined) throw new Error(`the stand-in created no checkout session ${id}`);
      state.sessions.set(id, { ...session, ...fields });
    },
    setRefund: (id, fields) => {
      const r = state.refunds.get(id);
      if (r !== undefined) state.refunds.set(id, { ...r, ...fields });
    },
    refund: (id) => state.refunds.get(id),
    close,
  };
}

/** An event as the processor sends it. */
export function processorEvent(type: string, object: Record<string, unknown>, livemode = true): Record<string, unknown> {
  return {
    id: rid("evt"),
    object: "event",
    api_version: Stripe.API_VERSION,
    created: Math.floor(Date.now() / 1000),
    livemode,
    pending_webhooks: 1,
    request: { id: null, idempotency_key: null },
    type,
    data: { object },
  };
}

/** A paid (or expired) Checkout Session object for one of our sessions (by default the one the stand-in created for it). */
export function checkoutSessionObject(f: {
  processorSessionId?: string;
  reference: string;
  amount: number;
  paymentIntent?: unknown;
  status?: "paid" | "expired";
  metadata?: Record<string, string>;
  currency?: string;
  livemode?: boolean;
}): Record<string, unknown> {
  const paid = f.status !== "expired";
  return {
    id: f.processorSessionId ?? sessionOfReference.get(f.reference) ?? rid("cs_test"),
    object: "checkout.session",
    amount_total: f.amount,
    currency: f.currency ?? "usd",
    client_reference_id: f.reference,
    metadata: f.metadata ?? { checkout_session_id: f.reference },
    mode: "payment",
    payment_intent: paid ? (f.paymentIntent ?? rid("pi")) : null,
    payment_status: paid ? "paid" : "unpaid",
    status: paid ? "complete" : "expired",
    livemode: f.livemode ?? true,
  };
}

/** The signed request the processor makes: exact body bytes and its Stripe-Signature header. */
export function signed(event: unknown, secret: string, timestamp?: number): { body: string; signature: string } {
  const body = JSON.stringify(event);
  return { body, signature: Stripe.webhooks.generateTestHeaderString({ payload: body, secret, ...(timestamp !== undefined ? { timestamp } : {}) }) };
}

export async function sendWebhook(baseUrl: string, req: { body: string; signature?: string }): Promise<{ status: number; body: Record<string, unknown> }> {
  const headers: Record<string, string> = { "content-type": "application/json; charset=utf-8" };
  if (req.signature !== undefined) headers["stripe-signature"] = req.signature;
  const res = await fetch(`${baseUrl}/v1/processor-webhooks/stripe`, { method: "POST", headers, body: req.body });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}
