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

export async function startProcessorStandIn(): Promise<ProcessorStandIn> {
  const seen: SeenRequest[] = [];
  const faults: { prefix: string; fault: Fault }[] = [];
  const refunds = new Map<string, Record<string, unknown>>();
  const sessions = new Map<string, Record<string, unknown>>();
  const refundByKey = new Map<string, string>();
  const hanging: ServerResponse[] = [];
  const state = { fee: 0, refundStatus: "pending" };

  const paymentIntent = (id: string) => ({
    id,
    object: "payment_intent",
    status: "succeeded",
    latest_charge: {
      id: `ch_${id}`,
      object: "charge",
      balance_transaction: { id: `txn_${id}`, object: "balance_transaction", fee: state.fee, amount: 0, net: 0 },
    },
  });

  const answer = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { "content-type": "application/json", "request-id": rid("req") });
    res.end(JSON.stringify(body));
  };

  const server = createServer((req, res) => {
    let text = "";
    req.on("data", (d: Buffer) => (text += d.toString()));
    req.on("end", () => {
      const url = new URL(req.url ?? "/", "http://stand-in");
      const path = url.pathname;
      const form = new URLSearchParams(req.method === "GET" ? url.search : text);
      seen.push({ method: req.method ?? "", path, form, headers: req.headers });
      const f = faults.findIndex((x) => path.startsWith(x.prefix));
      if (f >= 0) {
        const fault = faults.splice(f, 1)[0]!.fault;
        if (fault === "hang") return void hanging.push(res);
        return answer(res, fault.status, fault.body);
      }
      if (req.method === "POST" && path === "/v1/checkout/sessions") {
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
          livemode: /^Bearer (sk|rk)_live_/.test(String(req.headers.authorization ?? "")),
        };
        sessions.set(id, session);
        const reference = form.get("client_reference_id");
        if (reference !== null) sessionOfReference.set(reference, id);
        return answer(res, 200, session);
      }
      const cs = /^\/v1\/checkout\/sessions\/([^/]+)$/.exec(path);
      if (req.method === "GET" && cs !== null) {
        const session = sessions.get(cs[1] ?? "");
        if (session === undefined) return answer(res, 404, errorBody(404, "No such checkout.session", "resource_missing").body);
        const pi = session["payment_intent"];
        const expand = form.getAll("expand[0]").includes("payment_intent.latest_charge.balance_transaction");
        return answer(res, 200, typeof pi === "string" && expand ? { ...session, payment_intent: paymentIntent(pi) } : session);
      }
      const pi = /^\/v1\/payment_intents\/([^/]+)$/.exec(path);
      if (req.method === "GET" && pi !== null) return answer(res, 200, paymentIntent(pi[1] ?? ""));
      if (req.method === "POST" && path === "/v1/refunds") {
        const key = String(req.headers["idempotency-key"] ?? "");
        const known = refundByKey.get(key);
        if (known !== undefined) return answer(res, 200, refunds.get(known));
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
        refunds.set(id, refund);
        refundByKey.set(key, id);
        return answer(res, 200, refund);
      }
      const rf = /^\/v1\/refunds\/([^/]+)$/.exec(path);
      if (req.method === "GET" && rf !== null) {
        const r = refunds.get(rf[1] ?? "");
        return r === undefined ? answer(res, 404, errorBody(404, "No such refund", "resource_missing").body) : answer(res, 200, r);
      }
      return answer(res, 404, errorBody(404, `Unrecognized request URL (${req.method} ${path})`).body);
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
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
      for (const fault of fs) faults.push({ prefix, fault });
    },
    setSession: (id, fields) => {
      const session = sessions.get(id);
      if (session === undefined) throw new Error(`the stand-in created no checkout session ${id}`);
      sessions.set(id, { ...session, ...fields });
    },
    setRefund: (id, fields) => {
      const r = refunds.get(id);
      if (r !== undefined) refunds.set(id, { ...r, ...fields });
    },
    refund: (id) => refunds.get(id),
    close: async () => {
      for (const h of hanging) h.destroy();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
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
