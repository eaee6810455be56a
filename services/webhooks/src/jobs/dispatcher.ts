/**
 * The delivery worker pool of one process. Due deliveries live in PostgreSQL (`next_retry_at`), not in the
 * broker: workers claim them with FOR UPDATE SKIP LOCKED, so any number of replicas share the work. Workers
 * wake on a hint from this process's fan-out (then poll every few ms until the new rows are committed), on
 * NOTIFY (other replicas' fan-outs, hand-made retries and replays, recovered endpoints), on a short poll
 * (retries coming due), and when a retry is scheduled sooner than the poll. At most `concurrencyMax`
 * attempts run at once, and at most `endpointConcurrencyMax` per endpoint, so one slow or dead endpoint holds
 * a few slots and never the pool.
 */
import type postgres from "postgres";
import type { Logger } from "pino";
import { traceOutgoingHttp, type Sealer, type Sql } from "@treasury/service-kit";
import type { WebhooksConfig } from "../config.ts";
import { nextDelayMs } from "../domain/schedule.ts";
import { isGuarded } from "../domain/url.ts";
import { attemptHeaders, type AttemptSigners } from "../domain/signing.ts";
import {
  claimDue,
  DELIVERIES_CHANNEL,
  notifyWorkers,
  releaseClaims,
  settleAttempts,
  type AttemptOutcome,
  type ClaimedDelivery,
  type SettleItem,
} from "../store/deliveries.ts";
import { attemptSigners, requireSealer } from "../usecases/secrets.ts";
import type { SigningKeys } from "../usecases/signing-keys.ts";
import type { AttemptResult } from "../usecases/ports.ts";
import { postOnce } from "../adapters/http.ts";

/** Extra lease beyond the attempt timeouts, for settling the outcome in the database. */
const LEASE_MARGIN_MS = 5_000;
/**
 * Claimed deliveries kept ready per endpoint beyond its in-flight limit, as a multiple of that limit: a freed
 * slot starts the next one at once instead of waiting for a database round trip. A queued delivery starts
 * within one attempt's time (the limit's worth of attempts ahead of it), so a lease of two timeouts covers it.
 */
const PREFETCH_ROUNDS = 1;
/**
 * After a fan-out hint the new rows become visible when the consumer's transaction commits, a moment later:
 * poll every HINT_POLL_MS for HINT_WINDOW_MS, and tell other replicas at most every NOTIFY_INTERVAL_MS.
 */
const HINT_POLL_MS = 3;
const HINT_WINDOW_MS = 100;
const NOTIFY_INTERVAL_MS = 50;
/** After the fan-out wrote ordered rows, how long a moved ack floor wakes the workers at once. */
const ORDERED_WINDOW_MS = 1_000;
const CLAIM_BATCH_MAX = 100;
const SETTLE_BATCH_MAX = 200;
const SETTLE_TRIES_MAX = 3;
const FAILURE_BACKOFF_MAX_MS = 10_000;
/** How long stop() waits for attempts in flight before leaving them to their lease. */
const STOP_WAIT_MS = 5_000;

export interface DispatcherOptions {
  /** A pool whose sessions commit with synchronous_commit off (see store/deliveries.ts). */
  sql: Sql;
  log: Logger;
  config: WebhooksConfig;
  /** Opens the endpoints' sealed signing secrets; without it the service does not start the workers. */
  sealer: Sealer | undefined;
  /** The platform's Ed25519 keys, for `ed25519` endpoints. */
  signingKeys: Pick<SigningKeys, "signers">;
  /**
   * The stream sequence through which every event has been fanned out and committed (the fan-out durable's ack
   * floor): ordered deliveries of later events wait for it. Asked in the background at every claim round.
   */
  fannedOutThrough: () => Promise<number>;
  random?: () => number;
  /** Told of every attempt: its outcome and how long the HTTP attempt took (the service's metrics). */
  onAttempt?: (outcome: AttemptOutcome["status"], seconds: number) => void;
}

/** Classifies an attempt: 2xx delivered; 410 failed and disables the endpoint; anything else retries while attempts remain. */
export function outcomeOf(
  r: AttemptResult,
  d: Pick<ClaimedDelivery, "attempts" | "max_attempts">,
  schedule: readonly number[],
  random: number,
): AttemptOutcome {
  const base = { responseStatus: r.status, responseBody: r.body, responseTimeMs: r.timeMs, error: r.error };
  if (r.status !== null && r.status >= 200 && r.status < 300) return { ...base, status: "delivered", retryInMs: null, disableEndpoint: false };
  if (r.status === 410) return { ...base, status: "failed", retryInMs: null, disableEndpoint: true };
  const delay = nextDelayMs(schedule, d.attempts, d.max_attempts, random);
  return delay === null
    ? { ...base, status: "failed", retryInMs: null, disableEndpoint: false }
    : { ...base, status: "retrying", retryInMs: delay, disableEndpoint: false };
}

export class Dispatcher {
  private readonly opts: DispatcherOptions;
  private readonly random: () => number;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly perEndpoint = new Map<string, number>();
  /** Claimed deliveries waiting for a free slot of their endpoint. */
  private readonly queued = new Map<string, ClaimedDelivery[]>();
  private queuedTotal = 0;
  private hintUntil = 0;
  /** The fan-out's ack floor as last read (refreshFloor), and the read in progress. */
  private lastFloor = 0;
  /** Until when a moved floor wakes the workers: ordered rows were written by this process's fan-out. */
  private orderedUntil = 0;
  private floorAsked: Promise<void> | undefined;
  private floorReadAt = 0;
  private notifyTimer: NodeJS.Timeout | undefined;
  private listener: postgres.ListenMeta | undefined;
  private loop: Promise<void> | undefined;
  private stopped = true;
  private woken = false;
  private interrupt: (() => void) | undefined;
  /** The last fill left work behind (capacity or per-endpoint limits): a finished attempt should refill. */
  private backlog = false;
  /** Outcomes waiting to be recorded; one statement records a batch, so a busy worker pays one round trip for many. */
  private settleQueue: Array<{ item: SettleItem; done: (err?: unknown) => void }> = [];
  private settling: Promise<void> | undefined;

  constructor(opts: DispatcherOptions) {
    this.opts = opts;
    this.random = opts.random ?? Math.random;
  }

  async start(): Promise<void> {
    if (!this.stopped) return;
    this.stopped = false;
    this.listener = await this.opts.sql.listen(DELIVERIES_CHANNEL, () => this.wake());
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    clearTimeout(this.notifyTimer);
    this.notifyTimer = undefined;
    this.interrupt?.();
    await this.loop;
    await this.listener?.unlisten().catch(() => {});
    // Claimed but never started: hand them back now rather than after their lease.
    const waiting = [...this.queued.values()].flat();
    this.queued.clear();
    this.queuedTotal = 0;
    await releaseClaims(
      this.opts.sql,
      waiting.map((d) => ({ id: d.id, attempt: d.attempts })),
    ).catch((err: unknown) => this.opts.log.warn({ err }, "could not hand back queued deliveries; their leases will"));
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.allSettled([...this.inFlight]), new Promise((r) => (timer = setTimeout(r, STOP_WAIT_MS)))]);
    clearTimeout(timer);
  }

  isRunning(): boolean {
    return !this.stopped;
  }

  wake(): void {
    this.woken = true;
    this.interrupt?.();
  }

  /**
   * A consumer is committing new deliveries: poll briefly at a short interval until they are visible, and
   * NOTIFY the other replicas shortly after (outside the consumer's transaction; see fanOutDeliveries). Ordered
   * ones also wait for the fan-out's ack floor to pass them: for a moment, a floor that moves wakes the workers.
   */
  hint(ordered = false): void {
    this.hintUntil = Date.now() + HINT_WINDOW_MS;
    if (ordered) this.orderedUntil = Date.now() + ORDERED_WINDOW_MS;
    setTimeout(() => this.wake(), HINT_POLL_MS).unref();
    this.notifyTimer ??= setTimeout(() => {
      this.notifyTimer = undefined;
      if (this.stopped) return;
      notifyWorkers(this.opts.sql).catch((err: unknown) => this.opts.log.warn({ err }, "could not notify other delivery workers"));
    }, NOTIFY_INTERVAL_MS);
    this.notifyTimer.unref();
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (!this.stopped) {
      this.woken = false;
      try {
        await this.fill();
        failures = 0;
        await this.sleep(Date.now() < this.hintUntil ? HINT_POLL_MS : this.opts.config.pollIntervalMs);
      } catch (err) {
        failures += 1;
        this.opts.log.error({ err, failures }, "webhook dispatcher cycle failed; retrying");
        await this.sleep(Math.min(FAILURE_BACKOFF_MAX_MS, this.opts.config.pollIntervalMs * 2 ** Math.min(failures, 10)));
      }
    }
  }

  private sleep(ms: number): Promise<void> {
    if (this.stopped || this.woken) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.interrupt = () => {
        this.interrupt = undefined;
        done();
      };
    });
  }

  private perEndpointMax(): number {
    return this.opts.config.endpointConcurrencyMax * (1 + PREFETCH_ROUNDS);
  }

  /** Endpoints with deliveries running or queued here, and how many more each may take. */
  private busy(): Map<string, number> {
    const max = this.perEndpointMax();
    const out = new Map<string, number>();
    for (const id of new Set([...this.perEndpoint.keys(), ...this.queued.keys()])) {
      out.set(id, max - (this.perEndpoint.get(id) ?? 0) - (this.queued.get(id)?.length ?? 0));
    }
    return out;
  }

  /**
   * Asks the broker for the fan-out's ack floor in the background (one question at a time), so a claim never waits
   * for it: claims use the last floor known, and a floor that moved wakes the workers for the ordered deliveries
   * it releases. When the broker cannot be asked, ordered deliveries wait; nothing else does.
   */
  private refreshFloor(): void {
    this.floorReadAt = Date.now();
    this.floorAsked ??= this.opts
      .fannedOutThrough()
      .then((floor) => {
        if (floor <= this.lastFloor) return;
        this.lastFloor = floor;
        // Only while ordered rows were just written here: otherwise a moving floor releases nothing to wait for,
        // and the next round (a poll, a hint, a settled ordered delivery) picks up what it does release.
        if (Date.now() < this.orderedUntil) this.wake();
      })
      .catch((err: unknown) => this.opts.log.warn({ err }, "could not read the fan-out's ack floor; ordered deliveries wait"))
      .finally(() => (this.floorAsked = undefined));
  }

  /** Claims and starts attempts until the pool is full or nothing more is due. */
  private async fill(): Promise<void> {
    const cfg = this.opts.config;
    this.backlog = false;
    // Right after this process wrote ordered rows, at every round; otherwise once per poll interval, which is how
    // long another replica's ordered rows (or this one's after a restart) may wait for this replica to see them.
    if (Date.now() < this.orderedUntil || Date.now() - this.floorReadAt >= cfg.pollIntervalMs) this.refreshFloor();
    while (!this.stopped) {
      const capacity = cfg.concurrencyMax - this.inFlight.size - this.queuedTotal;
      if (capacity <= 0) {
        this.backlog = true;
        return;
      }
      const busy = this.busy();
      const limit = Math.min(capacity, CLAIM_BATCH_MAX);
      const claimed = await claimDue(this.opts.sql, {
        limit,
        busy,
        endpointMax: this.perEndpointMax(),
        leaseMs: 2 * cfg.timeoutMs + LEASE_MARGIN_MS,
        fannedOutThrough: this.lastFloor,
      });
      for (const d of claimed) this.launch(d);
      if (claimed.length === 0) {
        // Something due may be waiting for an endpoint at its limit: a finished attempt refills.
        if ([...busy.values()].some((free) => free <= 0)) this.backlog = true;
        return;
      }
    }
  }

  /** Starts the delivery now if its endpoint has a free slot, else queues it for the next free one. */
  private launch(d: ClaimedDelivery): void {
    if ((this.perEndpoint.get(d.endpoint_id) ?? 0) < this.opts.config.endpointConcurrencyMax) {
      this.begin(d);
      return;
    }
    const q = this.queued.get(d.endpoint_id) ?? [];
    q.push(d);
    this.queued.set(d.endpoint_id, q);
    this.queuedTotal += 1;
  }

  private startNextQueued(endpointId: string): void {
    const q = this.queued.get(endpointId);
    const next = q?.shift();
    if (q !== undefined && q.length === 0) this.queued.delete(endpointId);
    if (next === undefined) return;
    this.queuedTotal -= 1;
    this.begin(next);
  }

  private begin(d: ClaimedDelivery): void {
    this.perEndpoint.set(d.endpoint_id, (this.perEndpoint.get(d.endpoint_id) ?? 0) + 1);
    let slotHeld = true;
    // The endpoint's slot covers the request only; recording the outcome does not keep the endpoint busy.
    const releaseSlot = (): void => {
      if (!slotHeld) return;
      slotHeld = false;
      const n = (this.perEndpoint.get(d.endpoint_id) ?? 1) - 1;
      if (n <= 0) this.perEndpoint.delete(d.endpoint_id);
      else this.perEndpoint.set(d.endpoint_id, n);
      if (!this.stopped) this.startNextQueued(d.endpoint_id);
      // Refill once the endpoint's ready queue runs low, so claims come in batches.
      if (this.backlog && (this.queued.get(d.endpoint_id)?.length ?? 0) <= this.opts.config.endpointConcurrencyMax / 2) this.wake();
    };
    const task = this.attempt(d, releaseSlot)
      .catch((err: unknown) => this.opts.log.error({ err, delivery_id: d.id }, "webhook attempt failed unexpectedly; its lease will bring it back"))
      .finally(() => {
        releaseSlot();
        this.inFlight.delete(task);
        if (this.backlog) this.wake();
      });
    this.inFlight.add(task);
  }

  private async attempt(d: ClaimedDelivery, releaseSlot: () => void): Promise<void> {
    const cfg = this.opts.config;
    const now = new Date();
    let signers: AttemptSigners;
    try {
      signers = await attemptSigners(requireSealer(this.opts.sealer), this.opts.signingKeys, d.endpoint, now);
    } catch (err) {
      // A secret the ring cannot open (its key left the ring too early) is an attempt that failed here, retried on
      // the schedule like any other, rather than an error that would bring the row back at every lease's end.
      this.opts.log.error(
        { delivery_id: d.id, endpoint_id: d.endpoint_id, error: (err as Error).message },
        "webhook signing key or secret could not be opened",
      );
      releaseSlot();
      const unsigned: AttemptResult = { status: null, body: null, timeMs: 0, error: "signing secret unavailable", blocked: false };
      await this.settle(d, outcomeOf(unsigned, d, cfg.retryScheduleMs, this.random()));
      return;
    }
    const headers = attemptHeaders(d, signers, Math.floor(now.getTime() / 1000));
    // The request joins the trace of the event it delivers, and tells the receiver so (traceparent).
    const result = await traceOutgoingHttp({ name: "webhook POST", method: "POST", url: d.endpoint.url, cause: d.trace_headers }, (trace) =>
      postOnce({ url: d.endpoint.url, guarded: isGuarded(d.livemode, cfg.allowPrivateUrls) }, { ...headers, ...trace }, d.body, cfg.timeoutMs),
    );
    releaseSlot();
    const outcome = outcomeOf(result, d, cfg.retryScheduleMs, this.random());
    this.opts.onAttempt?.(outcome.status, result.timeMs / 1000);
    await this.settle(d, outcome);
    // The endpoint's next ordered delivery became due with this outcome (or waits for this one's retry).
    if (d.ordered && outcome.status !== "retrying") this.wake();
    if (outcome.status === "retrying" && outcome.retryInMs !== null && outcome.retryInMs < cfg.pollIntervalMs) {
      setTimeout(() => this.wake(), outcome.retryInMs + 1).unref();
    }
  }

  /** Queues an outcome for the next batch and resolves once it is recorded (or given up on after retries). */
  private settle(d: ClaimedDelivery, outcome: AttemptOutcome): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.settleQueue.push({
        item: { id: d.id, endpointId: d.endpoint_id, attempt: d.attempts, outcome },
        done: (err) => (err === undefined ? resolve() : reject(err)),
      });
      this.settling ??= this.drainSettleQueue().finally(() => (this.settling = undefined));
    });
  }

  private async drainSettleQueue(): Promise<void> {
    while (this.settleQueue.length > 0) {
      const batch = this.settleQueue.splice(0, SETTLE_BATCH_MAX);
      for (let tries = 1; ; tries++) {
        try {
          const recorded = await settleAttempts(
            this.opts.sql,
            batch.map((b) => b.item),
          );
          for (const b of batch) {
            if (!recorded.has(b.item.id))
              this.opts.log.warn({ delivery_id: b.item.id, attempt: b.item.attempt }, "attempt outcome not recorded: the delivery moved on (lease expired)");
            b.done();
          }
          break;
        } catch (err) {
          if (tries >= SETTLE_TRIES_MAX) {
            for (const b of batch) b.done(err);
            break;
          }
          await new Promise((r) => setTimeout(r, 50 * tries * (1 + this.random())));
        }
      }
    }
  }
}
