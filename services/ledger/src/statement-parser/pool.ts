/**
 * Bank statements are read in a small pool of worker threads, never on the ledger's event loop: the ledger is the
 * only writer of balances, and a statement that takes long to read (a file built to be slow, or a reader bug)
 * must not hold up a single posting. Each job has a time budget; a worker past it is terminated, the request
 * answers 422 statement_too_complex, and a fresh worker takes its place.
 */
import { Worker } from "node:worker_threads";
import { StatementError, type ParseOptions, type ParseResult } from "@treasury/bank-statements";
import { DomainError } from "@treasury/contracts";
import type { Logger } from "pino";
import type { StatementParser } from "../usecases/ports.ts";
import type { ParseJob, WorkerMessage } from "./protocol.ts";

export interface ParserPoolOptions {
  /** Worker threads, each reading one statement at a time. */
  workers: number;
  /** Longest one statement may take to read, from when its worker starts on it. */
  budgetMs: number;
  /** Statements waiting for a worker; past this, requests are shed with a retryable answer. */
  queueMax?: number;
  /** Old-space ceiling of each worker: a statement that needs more ends its worker like one over budget. */
  heapMbMax?: number;
  /** The worker's module; by default worker.ts beside this file (worker.js beside the bundle in the image). */
  workerUrl?: URL;
  log: Logger;
}

const QUEUE_PER_WORKER = 4;
/** The parse of a 1 MiB statement grows the heap by under 40 MiB (libs/bank-statements/src/memory.test.ts). */
const WORKER_HEAP_MB_MAX = 128;
/**
 * The young generation of a worker's heap: V8's default (up to 3 × 16 MiB semi-spaces) adds to the ledger's
 * resident memory while a statement is read, and the parse's short-lived objects fit in far less.
 */
const WORKER_YOUNG_MB = 8;

interface Job {
  payload: ParseJob;
  deadline: number;
  resolve(result: ParseResult): void;
  reject(error: Error): void;
}

interface Slot {
  worker: Worker;
  loaded: boolean;
  job?: Job;
  timer?: NodeJS.Timeout;
}

/** How a worker starts: a compiled module by its URL, or a bootstrap evaluated in the new thread. */
type WorkerSource = { url: URL } | { bootstrap: string };

/**
 * How to start the worker's module. The production bundle (deploy/bundle.mjs) puts it, compiled, beside main.js
 * as statement-parser-worker.js, where this code then runs. From sources (development and tests) it is
 * worker.ts beside this file, loaded through tsx: a worker does not inherit the loader hooks `--import tsx`
 * installed in the main thread, so the thread registers tsx itself before importing the module.
 */
function workerSource(url: URL | undefined): WorkerSource {
  const module = url ?? new URL(import.meta.url.endsWith(".ts") ? "./worker.ts" : "./statement-parser-worker.js", import.meta.url);
  if (!module.pathname.endsWith(".ts")) return { url: module };
  const tsx = JSON.stringify(import.meta.resolve("tsx/esm/api"));
  return { bootstrap: `import(${tsx}).then((tsx) => { tsx.register(); return import(${JSON.stringify(module.href)}); });` };
}

export class StatementParserPool implements StatementParser {
  private readonly slots = new Set<Slot>();
  private readonly idle: Slot[] = [];
  private readonly queue: Job[] = [];
  private readonly source: WorkerSource;
  private readonly queueMax: number;
  private closed = false;
  /** Whether any worker has loaded the parser yet; until then readiness waits on the first that does. */
  private loadedOnce = false;
  private readonly loadWaiters: { resolve(): void; reject(err: Error): void }[] = [];

  constructor(private readonly opts: ParserPoolOptions) {
    if (!Number.isInteger(opts.workers) || opts.workers < 1) throw new Error(`workers must be a positive integer, got ${opts.workers}`);
    this.source = workerSource(opts.workerUrl);
    this.queueMax = opts.queueMax ?? QUEUE_PER_WORKER * opts.workers;
  }

  /**
   * Reads a statement on a worker. Rejects with the library's StatementError, DomainError statement_too_complex
   * past the budget (or the worker's heap ceiling), or service_unavailable when the queue is full, the caller's
   * deadline passed while it waited, or the pool is closing.
   */
  parse(input: Buffer | string, opts: ParseOptions, deadline: number): Promise<ParseResult> {
    if (this.closed) return Promise.reject(unavailable("the ledger is shutting down"));
    if (this.queue.length >= this.queueMax) return Promise.reject(unavailable("every statement reader is busy"));
    return new Promise((resolve, reject) => {
      this.queue.push({ payload: { input, opts }, deadline, resolve, reject });
      this.dispatch();
    });
  }

  /** Resolves once a worker has loaded the parser: a worker that cannot load (a broken build) makes the ledger unready. */
  ready(): Promise<void> {
    if (this.loadedOnce) return Promise.resolve();
    if (this.slots.size === 0) {
      const slot = this.spawn();
      if (slot === undefined) return Promise.reject(unavailable("the ledger is shutting down"));
      this.idle.push(slot);
    }
    return new Promise((resolve, reject) => this.loadWaiters.push({ resolve, reject }));
  }

  /** Ends every worker; statements still waiting or being read are answered service_unavailable. */
  async close(): Promise<void> {
    this.closed = true;
    for (const job of this.queue.splice(0)) job.reject(unavailable("the ledger is shutting down"));
    await Promise.all([...this.slots].map((slot) => this.retire(slot, unavailable("the ledger is shutting down"))));
  }

  private dispatch(): void {
    while (this.queue.length > 0) {
      const slot = this.idle.pop() ?? (this.slots.size < this.opts.workers ? this.spawn() : undefined);
      if (slot === undefined) return;
      const job = this.queue.shift() as Job;
      if (Date.now() > job.deadline) {
        // The caller has given up: reading its statement would only delay the next one.
        this.idle.push(slot);
        job.reject(unavailable("the request waited past its deadline for a statement reader"));
        continue;
      }
      slot.job = job;
      slot.worker.postMessage(job.payload);
      if (slot.loaded) this.startBudget(slot);
    }
  }

  private spawn(): Slot | undefined {
    if (this.closed) return undefined;
    const resourceLimits = { maxOldGenerationSizeMb: this.opts.heapMbMax ?? WORKER_HEAP_MB_MAX, maxYoungGenerationSizeMb: WORKER_YOUNG_MB };
    const worker = "url" in this.source ? new Worker(this.source.url, { resourceLimits }) : new Worker(this.source.bootstrap, { eval: true, resourceLimits });
    const slot: Slot = { worker, loaded: false };
    this.slots.add(slot);
    worker.on("message", (msg: WorkerMessage) => (msg.type === "ready" ? this.onLoaded(slot) : this.onAnswer(slot, msg)));
    worker.on("error", (err) => void this.onWorkerError(slot, err));
    worker.on("exit", () => void this.retire(slot, new Error("a statement-parsing worker exited")));
    return slot;
  }

  private onLoaded(slot: Slot): void {
    slot.loaded = true;
    this.loadedOnce = true;
    for (const w of this.loadWaiters.splice(0)) w.resolve();
    // A job handed over while the worker loaded: its budget counts from now, not from the module loading.
    if (slot.job !== undefined && slot.timer === undefined) this.startBudget(slot);
  }

  private startBudget(slot: Slot): void {
    slot.timer = setTimeout(() => {
      this.opts.log.warn({ budget_ms: this.opts.budgetMs }, "statement took longer to read than its budget; its worker is replaced");
      void this.retire(slot, tooComplex(`the statement took longer than ${this.opts.budgetMs} ms to read`));
    }, this.opts.budgetMs);
  }

  private onAnswer(slot: Slot, msg: Exclude<WorkerMessage, { type: "ready" }>): void {
    const job = slot.job;
    clearTimeout(slot.timer);
    delete slot.job;
    delete slot.timer;
    this.idle.push(slot);
    if (job !== undefined) settle(job, msg);
    this.dispatch();
  }

  private async onWorkerError(slot: Slot, err: Error & { code?: string }): Promise<void> {
    // A worker past its heap ceiling is a statement that needs too much to read, as one over its time budget is.
    const outOfMemory = err.code === "ERR_WORKER_OUT_OF_MEMORY";
    if (!slot.loaded) for (const w of this.loadWaiters.splice(0)) w.reject(err);
    if (!outOfMemory) this.opts.log.error({ err }, "statement-parsing worker failed");
    await this.retire(slot, outOfMemory ? tooComplex("the statement needed more memory to read than a reader has") : err);
  }

  /** Ends a worker, answers its job with `reason`, and lets a new worker take waiting statements. */
  private async retire(slot: Slot, reason: Error): Promise<void> {
    if (!this.slots.delete(slot)) return;
    clearTimeout(slot.timer);
    const at = this.idle.indexOf(slot);
    if (at >= 0) this.idle.splice(at, 1);
    slot.job?.reject(reason);
    delete slot.job;
    const exited = slot.worker.terminate();
    this.dispatch();
    await exited;
  }
}

function settle(job: Job, msg: Exclude<WorkerMessage, { type: "ready" }>): void {
  if (msg.type === "parsed") job.resolve(msg.result);
  else if (msg.type === "refused") job.reject(new StatementError(msg.code, msg.message, msg.details));
  else job.reject(Object.assign(new Error(`statement parser failed: ${msg.message}`), { stack: msg.stack }));
}

function tooComplex(message: string): DomainError {
  return new DomainError("statement_too_complex", message, {
    details: [{ path: "data", message }],
    hint: "Split the statement into smaller files, or check that it is an export of a bank statement",
  });
}

function unavailable(message: string): DomainError {
  return new DomainError("service_unavailable", message);
}
