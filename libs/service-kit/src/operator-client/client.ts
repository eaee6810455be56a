/**
 * The operator clients' one channel (the CLI, and the console for a signed-in operator): NATS requests to the
 * services' `admin.*` operations, as the caller's NATS identity. A command
 * goes to the service that owns it; `audit list` and `find` ask every service and merge what they answer. Each
 * call carries a fresh request id, which the owning service keeps in its audit row, so `admin find <request id>`
 * shows what the call caused.
 */
import { ADMIN_SERVICES, DomainError, newRequestId, rpcSubject, type ServiceName } from "@treasury/contracts";
import type { NatsConnection } from "@nats-io/transport-node";
import { connectNats } from "../nats.ts";
import { rpcCall } from "../rpc-client.ts";

/** Bank files and chain audits take a while; a reply later than this leaves the outcome unknown. */
export const COMMAND_TIMEOUT_MS = 120_000;
/** A fan-out read: a service that has not answered by then is listed as unanswered. */
const FANOUT_TIMEOUT_MS = 30_000;
/** A CLI should say it cannot reach the broker instead of waiting for it. */
const CONNECT_TIMEOUT_MS = 10_000;

export interface Unanswered {
  service: ServiceName;
  error_code: string;
  error: string;
}

export interface FanOut<T> {
  answers: Array<{ service: ServiceName; body: T }>;
  unanswered: Unanswered[];
}

export class AdminClient {
  constructor(
    private readonly nc: NatsConnection,
    private readonly prefix: string,
  ) {}

  static async connect(url: string, prefix: string): Promise<AdminClient> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`cannot reach NATS within ${CONNECT_TIMEOUT_MS / 1000} s`)), CONNECT_TIMEOUT_MS);
    });
    try {
      return new AdminClient(await Promise.race([connectNats({ url, name: "admin-cli" }), timeout]), prefix);
    } finally {
      clearTimeout(timer);
    }
  }

  /** One service's answer; its error reply as a DomainError (service_timeout: the outcome is unknown). */
  async call(
    service: ServiceName,
    operation: string,
    payload: unknown,
    opts: { timeoutMs?: number; requestId?: string } = {},
  ): Promise<Record<string, unknown>> {
    const reply = await rpcCall(this.nc, rpcSubject(this.prefix, service, operation), payload, {
      timeoutMs: opts.timeoutMs ?? COMMAND_TIMEOUT_MS,
      requestId: opts.requestId ?? newRequestId(),
    });
    if (!reply.ok) throw new DomainError(reply.error.code, reply.error.message);
    return reply.body;
  }

  /** Every service's answer to a read; those that did not answer (not deployed, down) are listed, not fatal. */
  async fanOut<T>(operation: string, payload: unknown, services: readonly ServiceName[] = ADMIN_SERVICES): Promise<FanOut<T>> {
    const requestId = newRequestId();
    const settled = await Promise.allSettled(services.map((s) => this.call(s, operation, payload, { timeoutMs: FANOUT_TIMEOUT_MS, requestId })));
    const out: FanOut<T> = { answers: [], unanswered: [] };
    settled.forEach((r, i) => {
      const service = services[i] as ServiceName;
      if (r.status === "fulfilled") out.answers.push({ service, body: r.value as T });
      else out.unanswered.push({ service, ...errorOf(r.reason) });
    });
    return out;
  }

  async close(): Promise<void> {
    await this.nc.close();
  }
}

export function errorOf(err: unknown): { error_code: string; error: string } {
  return { error_code: err instanceof DomainError ? err.code : "error", error: err instanceof Error ? err.message : String(err) };
}
