/**
 * Shared setup of the webhooks integration tests: this file's database and prefix (libs/testing), the service
 * built in-process with a short retry schedule, RPC calls through NATS, events published straight to the
 * EVENTS stream, and real HTTP receivers on 127.0.0.1.
 */
import { randomBytes } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { jetstream } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { eventOwner, eventSubject, newId, rpcSubject, type AuthContext, type EventEnvelope, type EventType, type RpcReply } from "@treasury/contracts";
import { rpcCall } from "@treasury/service-kit";
import { setupTestEnv, type TestEnv } from "@treasury/testing";
import type { EndpointView } from "./domain/present.ts";
import { buildWebhooks, type WebhooksService } from "./service.ts";

const RPC_TIMEOUT_TEST_MS = 20_000;

/** Fast settings so retries and polls fit in a test. */
export const TEST_WEBHOOK_ENV = {
  WEBHOOK_RETRY_SCHEDULE_MS: "0,50,100,150",
  WEBHOOK_POLL_INTERVAL_MS: "50",
  WEBHOOK_TIMEOUT_MS: "1000",
  // The receivers listen on 127.0.0.1.
  WEBHOOK_ALLOW_PRIVATE_URLS: "true",
};

export function authFor(orgId: string, livemode = false): AuthContext {
  return { org_id: orgId, livemode, key_id: "key_test", scopes: null, request_id: `req_${randomBytes(16).toString("hex")}` };
}

/** What `create` answers: the endpoint and, this once, its secret. */
export type Created = EndpointView & { secret: string };

/** The error of a reply that must have failed. */
export function err(reply: RpcReply): { code: string; message: string; details?: Array<{ path: string }> } {
  if (reply.ok) throw new Error(`expected an error, got ${reply.status} ${JSON.stringify(reply.body)}`);
  return reply.error;
}

export function newOrg(): string {
  return `org_${randomBytes(8).toString("hex")}`;
}

export interface Harness {
  env: TestEnv;
  svc: WebhooksService;
  call(op: string, auth: AuthContext, body?: unknown): Promise<RpcReply>;
  /** `manageWebhooks` with the given body; the reply's `data` on success, throws otherwise. */
  manage<T = Record<string, unknown>>(auth: AuthContext, body: Record<string, unknown>): Promise<T>;
  publish(evt: Partial<EventEnvelope> & { type: EventType; org_id: string }): Promise<EventEnvelope>;
  close(): Promise<void>;
}

let sequence = 0;

export function makeEvent(evt: Partial<EventEnvelope> & { type: string; org_id: string }): EventEnvelope {
  sequence += 1;
  // The fan-out delivers only what the type's owner emitted (ADR 0011): the source is the owner unless a test says otherwise.
  const source = eventOwner(evt.type) ?? "test";
  return { id: newId("evt"), livemode: false, created_at: new Date().toISOString(), sequence, source, data: { n: sequence }, ...evt };
}

export async function publishEvent(nc: NatsConnection, prefix: string, evt: EventEnvelope): Promise<void> {
  await jetstream(nc).publish(eventSubject(prefix, evt.type as EventType), JSON.stringify(evt), { msgID: evt.id });
}

export async function startWebhooks(extraEnv: Record<string, string> = {}): Promise<Harness> {
  const env = await setupTestEnv();
  const svc = await buildWebhooks(env.env("webhooks", { ...TEST_WEBHOOK_ENV, ...extraEnv }));
  await svc.start();
  // The test superuser's connection: the service's own may not publish to its public subjects (ADR 0011).
  const call = async (op: string, auth: AuthContext, body: unknown = {}) =>
    rpcCall(await env.nats(), rpcSubject(env.prefix, "webhooks", op), { auth, params: {}, query: {}, body }, { timeoutMs: RPC_TIMEOUT_TEST_MS });
  return {
    env,
    svc,
    call,
    async manage<T>(auth: AuthContext, body: Record<string, unknown>): Promise<T> {
      const r = await call("manageWebhooks", auth, body);
      if (!r.ok) throw new Error(`manageWebhooks ${String(body["action"])} failed: ${r.error.code} ${r.error.message}`);
      return r.body["data"] as T;
    },
    async publish(partial) {
      const evt = makeEvent(partial);
      // As the test superuser: the service's own identity may publish only the events it owns.
      await publishEvent(await env.nats(), env.prefix, evt);
      return evt;
    },
    async close() {
      await svc.stop();
      await env.cleanup();
    },
  };
}

export interface Received {
  headers: http.IncomingHttpHeaders;
  body: string;
  at: number;
}

export type Responder = (r: Received, n: number) => { status: number; body?: string; delayMs?: number; headers?: Record<string, string> } | "hang";

/** A real HTTP receiver on 127.0.0.1 that records every request and answers as `respond` says. */
export class Receiver {
  readonly received: Received[] = [];
  respond: Responder = () => ({ status: 200, body: "ok" });
  private readonly server: http.Server;
  private readonly hanging = new Set<http.ServerResponse>();

  private constructor() {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const r: Received = { headers: req.headers, body: Buffer.concat(chunks).toString("utf8"), at: Date.now() };
        this.received.push(r);
        const answer = this.respond(r, this.received.length);
        if (answer === "hang") {
          this.hanging.add(res);
          res.on("close", () => this.hanging.delete(res));
          return;
        }
        const send = (): void => void res.writeHead(answer.status, { "content-type": "text/plain", ...answer.headers }).end(answer.body ?? "");
        if (answer.delayMs) setTimeout(send, answer.delayMs);
        else send();
      });
    });
    this.server.keepAliveTimeout = 5_000;
  }

  static async start(): Promise<Receiver> {
    const r = new Receiver();
    await new Promise<void>((resolve) => r.server.listen(0, "127.0.0.1", resolve));
    return r;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hook`;
  }

  byEvent(eventId: string): Received[] {
    return this.received.filter((r) => (JSON.parse(r.body) as { id: string }).id === eventId);
  }

  async close(): Promise<void> {
    for (const res of this.hanging) res.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
