/**
 * Steady money traffic through the gateway for fault runs: checkouts (create + sandbox completion), partial
 * refunds of completed checkouts and sandbox payouts from creators' earnings, started at an even rate whatever the
 * answers do. Every request carries an idempotency key or reference and is sent again with the same one on 429,
 * 5xx or a network error, a bounded number of times with backoff, as a careful client would. Every attempt is kept
 * (when it started and ended, what it got), so the figures around each fault can be computed afterwards.
 */
import { Pool } from "undici";

/** Attempts of one request before its flow counts as failed (the last waits are 2 s each). */
export const ATTEMPTS_MAX = 10;
const BACKOFF_FIRST_MS = 200;
const BACKOFF_MAX_MS = 2_000;
/** Longer than the gateway's own deadline (10 s), so the gateway's answer arrives first. */
const REQUEST_TIMEOUT_MS = 20_000;
/** Flows in flight at most: during an outage new ones are skipped (and counted) rather than piling up. */
export const IN_FLIGHT_MAX = 400;
const CONNECTIONS_MAX = 64;

/** A deterministic generator from a seed (mulberry32): the same seed draws the same traffic and fault order. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

export interface Attempt {
  flow: number;
  step: string;
  /** Seconds since the load started. */
  start: number;
  end: number;
  /** HTTP status, 0 for a network error or a timeout. */
  status: number;
  code: string | undefined;
}

export type FlowKind = "checkout" | "refund" | "payout";
/** ok: the client saw it succeed; refused: a final 4xx (nothing may have moved); failed: retries ran out. */
export type FlowState = "running" | "ok" | "refused" | "failed";

export interface Flow {
  n: number;
  kind: FlowKind;
  /** The client's key: idempotency key prefix (checkout, refund) or the payout's reference_id. */
  key: string;
  startedAt: number;
  state: FlowState;
  /** What the last answer said when it was not a success. */
  lastStatus: number;
  lastCode: string | undefined;
  participant: string;
  amount: number;
  /** checkout: its session id once created; refund: the sale's session id. */
  sessionId: string | undefined;
}

export interface Reply {
  status: number;
  body: Record<string, unknown>;
}

export interface Client {
  send(method: "GET" | "POST", path: string, body?: unknown): Promise<Reply>;
  close(): Promise<void>;
}

export function client(baseUrl: string, apiKey: string): Client {
  const pool = new Pool(baseUrl, { connections: CONNECTIONS_MAX, pipelining: 1, headersTimeout: REQUEST_TIMEOUT_MS, bodyTimeout: REQUEST_TIMEOUT_MS });
  return {
    async send(method, path, body) {
      try {
        const res = await pool.request({
          method,
          path,
          headers: { "x-api-key": apiKey, "content-type": "application/json" },
          ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
          signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
        });
        const text = await res.body.text();
        let parsed: Record<string, unknown>;
        try {
          parsed = JSON.parse(text) as Record<string, unknown>;
        } catch {
          parsed = { raw: text.slice(0, 200) };
        }
        return { status: res.statusCode, body: parsed };
      } catch (err) {
        return { status: 0, body: { error: err instanceof Error ? err.message : String(err) } };
      }
    },
    close: () => pool.close(),
  };
}

/** Statuses a client sends again with the same key: the outcome is unknown or the service was not there. */
export function isRetryable(status: number): boolean {
  return status === 0 || status === 429 || status >= 500;
}

export interface LoadOptions {
  client: Client;
  seed: number;
  /** Flows started per second. */
  rate: number;
  participants: string[];
  /** Share (percent) of the participants' sales they earn: what the payouts may take. */
  creatorPercent: number;
}

/** The load: start() begins, stop() stops starting flows and waits for those in flight. */
export class Load {
  readonly flows: Flow[] = [];
  readonly attempts: Attempt[] = [];
  skipped = 0;
  private readonly random: () => number;
  /** Backoff jitter draws from its own sequence, so retries do not shift the traffic's draws. */
  private readonly jitter: () => number;
  private readonly t0 = performance.now();
  private timer: NodeJS.Timeout | undefined;
  private readonly inFlight = new Set<Promise<void>>();
  /** Per participant: cents earned by completed checkouts minus what refunds and payouts may take back. */
  private readonly spendable = new Map<string, number>();
  /** Completed checkouts that may still be partly refunded: session id → cents left to refund. */
  private readonly refundable = new Map<string, { participant: string; left: number }>();

  constructor(private readonly opts: LoadOptions) {
    this.random = seededRandom(opts.seed);
    this.jitter = seededRandom(opts.seed ^ 0x71773e);
  }

  /** Seconds since the load was created. */
  now(): number {
    return (performance.now() - this.t0) / 1000;
  }

  start(): void {
    const intervalMs = 1000 / this.opts.rate;
    const startedAt = performance.now();
    let n = 0;
    const tick = () => {
      while (startedAt + n * intervalMs <= performance.now()) {
        n += 1;
        this.launch();
      }
      this.timer = setTimeout(tick, Math.max(1, startedAt + n * intervalMs - performance.now()));
    };
    tick();
  }

  /** Starts `n` flows at once, beside the steady ones: a fault injected just after finds requests in flight. */
  burst(n: number): void {
    for (let i = 0; i < n; i++) this.launch();
  }

  private launch(): void {
    if (this.inFlight.size >= IN_FLIGHT_MAX) {
      this.skipped += 1;
      return;
    }
    const p: Promise<void> = this.runFlow(this.nextFlow()).finally(() => this.inFlight.delete(p));
    this.inFlight.add(p);
  }

  /** Closed loop: `concurrency` clients run flows back to back for `seconds`; resolves with successful flows per second. */
  async closedLoop(concurrency: number, seconds: number): Promise<number> {
    const until = performance.now() + seconds * 1000;
    const startedAt = performance.now();
    let ok = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (performance.now() < until) {
          const f = this.nextFlow();
          await this.runFlow(f);
          if (f.state === "ok") ok += 1;
        }
      }),
    );
    return ok / ((performance.now() - startedAt) / 1000);
  }

  async stop(): Promise<void> {
    if (this.timer !== undefined) clearTimeout(this.timer);
    while (this.inFlight.size > 0) await Promise.all([...this.inFlight]);
  }

  private pick<T>(xs: readonly T[]): T {
    const x = xs[Math.floor(this.random() * xs.length)];
    if (x === undefined) throw new Error("nothing to pick from");
    return x;
  }

  /** Mostly checkouts; a refund or a payout when one can be afforded. */
  private nextFlow(): Flow {
    const n = this.flows.length;
    const roll = this.random();
    const base = { n, startedAt: this.now(), state: "running" as const, lastStatus: 0, lastCode: undefined };
    const seed = this.opts.seed;
    if (roll < 0.2 && this.refundable.size > 0) {
      const [sessionId, sale] = this.pick([...this.refundable]);
      const amount = Math.min(sale.left, 100 + Math.floor(this.random() * 400));
      // Reserved now: a refund takes the creator's share back, which payouts must not spend meanwhile.
      sale.left -= amount;
      if (sale.left < 100) this.refundable.delete(sessionId);
      this.spendable.set(sale.participant, (this.spendable.get(sale.participant) ?? 0) - amount);
      return this.add({ ...base, kind: "refund", key: `chaos-${seed}-refund-${n}`, participant: sale.participant, amount, sessionId });
    }
    if (roll < 0.4) {
      const rich = [...this.spendable].filter(([, cents]) => cents >= 2_000);
      if (rich.length > 0) {
        const [participant, cents] = this.pick(rich);
        const amount = 200 + Math.floor(this.random() * 300);
        this.spendable.set(participant, cents - amount);
        return this.add({ ...base, kind: "payout", key: `chaos-${seed}-payout-${n}`, participant, amount, sessionId: undefined });
      }
    }
    const amount = 1_000 + Math.floor(this.random() * 2_000);
    return this.add({
      ...base,
      kind: "checkout",
      key: `chaos-${seed}-checkout-${n}`,
      participant: this.pick(this.opts.participants),
      amount,
      sessionId: undefined,
    });
  }

  private add(f: Flow): Flow {
    this.flows.push(f);
    return f;
  }

  /** Sends one request until it succeeds, is refused, or runs out of attempts. */
  async request(flow: Flow, step: string, method: "GET" | "POST", path: string, body: unknown, success: (r: Reply) => boolean): Promise<Reply> {
    let reply: Reply = { status: 0, body: {} };
    for (let attempt = 1; attempt <= ATTEMPTS_MAX; attempt++) {
      const start = this.now();
      reply = await this.opts.client.send(method, path, body);
      const code = typeof reply.body["error_code"] === "string" ? reply.body["error_code"] : undefined;
      this.attempts.push({ flow: flow.n, step, start, end: this.now(), status: reply.status, code });
      flow.lastStatus = reply.status;
      flow.lastCode = code;
      if (success(reply) || !isRetryable(reply.status)) return reply;
      if (attempt < ATTEMPTS_MAX)
        await new Promise((r) => setTimeout(r, Math.min(BACKOFF_MAX_MS, BACKOFF_FIRST_MS * 2 ** (attempt - 1)) * (0.75 + this.jitter() * 0.5)));
    }
    return reply;
  }

  /** Runs a flow (again, with the same keys, when called for a flow that failed). */
  async runFlow(flow: Flow): Promise<void> {
    flow.state = "running";
    if (flow.kind === "checkout") flow.state = await this.checkout(flow);
    else if (flow.kind === "refund") flow.state = await this.refund(flow);
    else flow.state = await this.payout(flow);
  }

  private async checkout(flow: Flow): Promise<FlowState> {
    const ok2xx = (r: Reply) => r.status >= 200 && r.status < 300;
    if (flow.sessionId === undefined) {
      const created = await this.request(
        flow,
        "checkout.create",
        "POST",
        "/v1/checkout-sessions",
        { participant_id: flow.participant, amount: flow.amount, idempotency_key: `${flow.key}-create` },
        ok2xx,
      );
      if (!ok2xx(created)) return isRetryable(created.status) ? "failed" : "refused";
      flow.sessionId = String((created.body["checkout_session"] as Record<string, unknown> | undefined)?.["id"]);
    }
    const done = await this.request(
      flow,
      "checkout.complete",
      "POST",
      `/v1/sandbox/checkouts/${flow.sessionId}/complete`,
      { idempotency_key: `${flow.key}-complete` },
      ok2xx,
    );
    if (!ok2xx(done)) return isRetryable(done.status) ? "failed" : "refused";
    const earned = Math.floor((flow.amount * this.opts.creatorPercent) / 100);
    this.spendable.set(flow.participant, (this.spendable.get(flow.participant) ?? 0) + earned);
    this.refundable.set(flow.sessionId, { participant: flow.participant, left: flow.amount });
    return "ok";
  }

  private async refund(flow: Flow): Promise<FlowState> {
    const ok2xx = (r: Reply) => r.status >= 200 && r.status < 300;
    const r = await this.request(
      flow,
      "refund",
      "POST",
      "/v1/refunds",
      { original_sale_reference: `checkout:${flow.sessionId}`, amount: flow.amount, reason: "chaos run", idempotency_key: flow.key },
      ok2xx,
    );
    if (ok2xx(r)) return "ok";
    return isRetryable(r.status) ? "failed" : "refused";
  }

  private async payout(flow: Flow): Promise<FlowState> {
    // A replay of a reference already used answers 409 duplicate_reference_id with that payout: the first request succeeded.
    const ok = (r: Reply) => (r.status >= 200 && r.status < 300) || (r.status === 409 && r.body["error_code"] === "duplicate_reference_id");
    const r = await this.request(flow, "payout", "POST", "/v1/payouts", { participant_id: flow.participant, amount: flow.amount, reference_id: flow.key }, ok);
    if (ok(r)) return "ok";
    return isRetryable(r.status) ? "failed" : "refused";
  }
}
