/**
 * One fault run: a private stack (chaos-stack.ts), steady load through the gateway (chaos-load.ts), faults at even
 * intervals, then the end state (chaos-check.ts). `npm run chaos` and tests/e2e/chaos-short.test.ts both run it.
 *
 * Per fault: the attempts that failed (retryable answers and network errors) because of it, the 500s among them,
 * the flows started after it that gave up, and the seconds to recover: from the fault to the start of the last
 * failed attempt it caused, after which every attempt started succeeded. A failed attempt is caused by the first
 * fault injected while it was in flight (it adds nothing to the recovery time: it started before; a request still
 * waiting when a later fault comes was stuck already), else by the last fault before it started (the system had
 * not recovered yet).
 */
import type { ServiceName } from "@treasury/contracts";
import { createApiKey, createOrg } from "../services/gateway/src/admin.ts";
import { checkEndState, waitUntilQuiet, type EndState } from "./chaos-check.ts";
import { client, IN_FLIGHT_MAX, isRetryable, Load, seededRandom, type Attempt } from "./chaos-load.ts";
import { startChaosStack, type ChaosStack, type NatsNodeRole, type ServicePlan } from "./chaos-stack.ts";
import { adminSql } from "./lib.ts";
import { WebhookReceiver } from "./webhook-receiver.ts";

export type Fault =
  | { name: string; kind: "kill"; targets: string[] }
  | { name: string; kind: "nats" }
  | { name: string; kind: "nats-node"; role: NatsNodeRole }
  | { name: string; kind: "postgres" };

/** On a NATS cluster the NATS faults are one node at a time: one that leads nothing, then the EVENTS stream's leader. */
export const NATS_NODE_FAULTS: Fault[] = [
  { name: "kill -9 NATS node (follower)", kind: "nats-node", role: "follower" },
  { name: "kill -9 NATS node (stream leader)", kind: "nats-node", role: "leader" },
];

/** The system under test: every service, two ledger and two payments replicas. */
export const FULL_PLAN: ServicePlan[] = [
  { name: "ledger", replicas: 2 },
  { name: "payments", replicas: 2 },
  { name: "payouts", replicas: 1 },
  { name: "refunds", replicas: 1 },
  { name: "webhooks", replicas: 1 },
  { name: "receipts", replicas: 1 },
  { name: "kyc", replicas: 1 },
  { name: "risk", replicas: 1 },
  { name: "gateway", replicas: 1 },
];

/**
 * Every fault of a full run: each service process killed in turn, the whole ledger at once, NATS (on a cluster of
 * `natsNodes`, each of NATS_NODE_FAULTS), PostgreSQL.
 */
export function allFaults(plan: ServicePlan[], random: () => number, natsNodes = 1): Fault[] {
  const kills: Fault[] = plan.flatMap((p) =>
    Array.from({ length: p.replicas }, (_, i) => {
      const id = p.replicas > 1 ? `${p.name}#${i + 1}` : p.name;
      return { name: `kill -9 ${id}`, kind: "kill" as const, targets: [id] };
    }),
  );
  const ledgers = plan.find((p) => p.name === "ledger")?.replicas ?? 0;
  if (ledgers > 1) kills.push({ name: "kill -9 every ledger", kind: "kill", targets: Array.from({ length: ledgers }, (_, i) => `ledger#${i + 1}`) });
  const nats: Fault[] = natsNodes > 1 ? NATS_NODE_FAULTS : [{ name: "restart nats-server (kill -9)", kind: "nats" }];
  const faults: Fault[] = [...kills, ...nats, { name: "restart PostgreSQL (-m immediate)", kind: "postgres" }];
  // Fisher–Yates with the run's seed: the same seed, the same order.
  for (let i = faults.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [faults[i], faults[j]] = [faults[j] as Fault, faults[i] as Fault];
  }
  return faults;
}

export interface RunOptions {
  seed: number;
  /** Flows started per second. */
  rate: number;
  plan: ServicePlan[];
  faults: Fault[];
  /** Steady load before the first fault, between faults, and after the last one. */
  warmupSec: number;
  intervalSec: number;
  cooldownSec: number;
  /** How long the end waits for intents, events and deliveries to settle. */
  quietTimeoutMs: number;
  /** NATS nodes: 1 (default) or a JetStream cluster of 3 (chaos-stack.ts). */
  natsCluster?: number;
  log(line: string): void;
}

export interface FaultResult {
  name: string;
  /** Seconds since the load started. */
  at: number;
  failedAttempts: number;
  serverErrors: number;
  failedFlows: number;
  recoverySec: number;
  /** For kills: seconds until the killed processes answered /readyz again. */
  restartSec: number | undefined;
  /** The failed attempts by status and error code (`0 network` for a network error or a timeout of the client). */
  failures: string[];
}

export interface RunResult {
  seed: number;
  rate: number;
  steady: { failedAttempts: number; serverErrors: number };
  faults: FaultResult[];
  attempts: number;
  serverErrors: number;
  /** 500 answers by step and code, for the report. */
  serverErrorSamples: string[];
  /** Flows refused with a 4xx, by kind and code: the load only asks for what can be done, so each is a finding. */
  refusals: string[];
  skipped: number;
  /** Exits of service processes that no fault asked for. */
  crashes: string[];
  /** What had not settled when the end's wait ran out (all zero when quiet). */
  unsettled: Record<string, number>;
  end: EndState;
  durationSec: number;
  logDir: string;
}

const PARTICIPANTS = 8;
export const CREATOR_PERCENT = 80;
const unlimited = { capacity: 1e12, refill_per_sec: 1e12 };

/** A run's settings for the services: short webhook retries and attempt timeout, so the end's wait stays bounded. */
export const STACK_ENV: Partial<Record<ServiceName, Record<string, string>>> = {
  webhooks: { WEBHOOK_ALLOW_PRIVATE_URLS: "true", WEBHOOK_TIMEOUT_MS: "5000", WEBHOOK_RETRY_SCHEDULE_MS: "0,1000,2000,5000,10000,30000,60000" },
};

/** An org with lifted rate limits, its sandbox key, a webhook endpoint at the receiver, and the participants. */
export async function setUp(stack: ChaosStack, receiver: WebhookReceiver): Promise<{ orgId: string; apiKey: string; participants: string[] }> {
  const sql = adminSql(stack.adminUrl);
  try {
    const { org_id } = await createOrg(sql, { name: "chaos" });
    // Capacity under faults is what is measured, not the per-key limits.
    await sql`update gateway.orgs set rate_limits = ${sql.json({ read: unlimited, write: unlimited, treasury_write: unlimited })} where id = ${org_id}`;
    const { api_key } = await createApiKey(sql, { orgId: org_id, environment: "sandbox", scopes: null });
    const c = client(stack.gatewayUrl, api_key);
    try {
      const hook = await c.send("POST", "/v1/webhooks", { action: "create", url: receiver.url });
      if (hook.status !== 201) throw new Error(`webhook endpoint: ${hook.status} ${JSON.stringify(hook.body)}`);
      const secret = (hook.body["data"] as Record<string, unknown> | undefined)?.["secret"];
      if (typeof secret !== "string") throw new Error(`webhook endpoint: no secret in ${JSON.stringify(hook.body)}`);
      receiver.useSecret(secret);
      const participants: string[] = [];
      for (let i = 0; i < PARTICIPANTS; i++) {
        const id = `chaos_creator_${i}`;
        const r = await c.send("POST", "/v1/participants", { participant_id: id, default_split_percent: CREATOR_PERCENT });
        if (r.status !== 201 && r.status !== 200) throw new Error(`participant: ${r.status} ${JSON.stringify(r.body)}`);
        participants.push(id);
      }
      return { orgId: org_id, apiKey: api_key, participants };
    } finally {
      await c.close();
    }
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/**
 * Flows started just before a kill, and how long before: at a light steady rate a process is idle most of the
 * time, and a kill that finds no request in flight proves little. 50–200 ms after such a burst starts, its
 * completions, refunds and payouts are at the ledger and at payments (measured: 4–10 requests in flight on one
 * ledger replica of two; none at 0 or 300 ms).
 */
const KILL_BURST_FLOWS = 20;
const KILL_BURST_LEAD_MS = 100;

/** Injects a fault; resolves once injected, with when the stack was whole again (seconds, in the background for kills). */
async function inject(stack: ChaosStack, load: Load, fault: Fault, log: (l: string) => void): Promise<{ restart: Promise<number | undefined> }> {
  if (fault.kind === "kill" || fault.kind === "nats-node") {
    load.burst(KILL_BURST_FLOWS);
    await sleep(KILL_BURST_LEAD_MS);
  }
  const at = performance.now();
  if (fault.kind === "kill") {
    const pids = fault.targets.map((t) => stack.kill(t));
    log(`  ${fault.name} (pid ${pids.join(", ")})`);
    const restart = Promise.all(fault.targets.map((t) => stack.readyAgain(t, at))).then(
      (times) => (Math.max(...times) - at) / 1000,
      () => undefined,
    );
    return { restart };
  }
  log(`  ${fault.name}`);
  if (fault.kind === "nats") await stack.restartNats();
  else if (fault.kind === "nats-node") await stack.killNatsNode(fault.role, log);
  else await stack.restartPostgres();
  return { restart: Promise.resolve((performance.now() - at) / 1000) };
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Index of the fault that caused a failed attempt (see the header), or -1 when it failed before any fault. */
function causeOf(a: Attempt, times: number[]): number {
  // The first fault that hit it in flight: a request still waiting when a later fault comes was stuck already.
  for (let k = 0; k < times.length; k++) {
    const t = times[k] as number;
    if (t >= a.start && t <= a.end) return k;
  }
  for (let k = times.length - 1; k >= 0; k--) if ((times[k] as number) <= a.start) return k;
  return -1;
}

/** The figures of each fault (index k of `times`) and of the steady load before the first (index -1). */
function figures(attempts: Attempt[], flows: Load["flows"], times: number[]): Map<number, Omit<FaultResult, "name" | "at" | "restartSec">> {
  const out = new Map<number, Omit<FaultResult, "name" | "at" | "restartSec">>();
  for (let k = -1; k < times.length; k++) {
    const at = k < 0 ? 0 : (times[k] as number);
    const until = times[k + 1] ?? Number.POSITIVE_INFINITY;
    const failedFlows = flows.filter((f) => f.startedAt >= at && f.startedAt < until && f.state === "failed").length;
    out.set(k, { failedAttempts: 0, serverErrors: 0, failedFlows, recoverySec: 0, failures: [] });
  }
  for (const a of attempts) {
    if (!isRetryable(a.status)) continue;
    const k = causeOf(a, times);
    const f = out.get(k);
    if (f === undefined) continue;
    f.failedAttempts += 1;
    if (a.status === 500) f.serverErrors += 1;
    f.failures.push(`${a.status} ${a.code ?? (a.status === 0 ? "network" : "?")}`);
    if (k >= 0) f.recoverySec = Math.max(f.recoverySec, Math.round((a.start - (times[k] as number)) * 10) / 10);
  }
  for (const f of out.values()) f.failures = tally(f.failures);
  return out;
}

type Mark = { fault: Fault; at: number; restart: Promise<number | undefined> };

/** Steady load, then each fault at its interval, then the cool-down; answers when each fault was injected. */
async function driveFaults(stack: ChaosStack, load: Load, opts: RunOptions): Promise<Mark[]> {
  load.start();
  await sleep(opts.warmupSec * 1000);
  const marks: Mark[] = [];
  for (const fault of opts.faults) {
    const at = load.now();
    marks.push({ fault, at, ...(await inject(stack, load, fault, opts.log)) });
    await sleep(Math.max(0, opts.intervalSec - (load.now() - at)) * 1000);
  }
  await sleep(opts.cooldownSec * 1000);
  await load.stop();
  return marks;
}

async function faultResults(load: Load, marks: Mark[]): Promise<{ faults: FaultResult[]; steady: { failedAttempts: number; serverErrors: number } }> {
  const byFault = figures(
    load.attempts,
    load.flows,
    marks.map((m) => m.at),
  );
  const faults: FaultResult[] = [];
  for (const [i, m] of marks.entries()) {
    const f = byFault.get(i);
    if (f === undefined) throw new Error(`no figures for fault ${i}`);
    faults.push({ name: m.fault.name, at: Math.round(m.at * 10) / 10, ...f, restartSec: await m.restart });
  }
  const steady = byFault.get(-1);
  return { faults, steady: { failedAttempts: steady?.failedAttempts ?? 0, serverErrors: steady?.serverErrors ?? 0 } };
}

/** Distinct values with how often each occurs, as `value ×n`. */
function tally(keys: string[]): string[] {
  const m = new Map<string, number>();
  for (const k of keys) m.set(k, (m.get(k) ?? 0) + 1);
  return [...m].map(([k, n]) => `${k} ×${n}`);
}

export async function runChaos(opts: RunOptions): Promise<RunResult> {
  const startedAt = performance.now();
  const receiver = await WebhookReceiver.start();
  const nats = (opts.natsCluster ?? 1) > 1 ? `; NATS: a ${opts.natsCluster}-node JetStream cluster` : "";
  opts.log(`starting the stack: ${opts.plan.map((p) => (p.replicas > 1 ? `${p.replicas}× ${p.name}` : p.name)).join(", ")}${nats}`);
  const stack = await startChaosStack({ services: opts.plan, env: STACK_ENV, ...(opts.natsCluster !== undefined ? { natsCluster: opts.natsCluster } : {}) });
  const sql = adminSql(stack.adminUrl);
  try {
    const { orgId, apiKey, participants } = await setUp(stack, receiver);
    const c = client(stack.gatewayUrl, apiKey);
    const load = new Load({ client: c, seed: opts.seed, rate: opts.rate, participants, creatorPercent: CREATOR_PERCENT });
    opts.log(
      `load: ${opts.rate} flows/s (checkouts, refunds, payouts), seed ${opts.seed}; ${opts.faults.length} faults every ${opts.intervalSec.toFixed(1)} s; logs in ${stack.dir}`,
    );
    const marks = await driveFaults(stack, load, opts);
    opts.log(`load stopped after ${load.now().toFixed(0)} s: ${load.flows.length} flows, ${load.attempts.length} requests; waiting for the system to settle`);
    const { faults, steady } = await faultResults(load, marks);
    const unsettled = await waitUntilQuiet(sql, { orgId }, receiver, opts.quietTimeoutMs);
    const end = await checkEndState(sql, { orgId }, load, receiver);
    await c.close();
    const errors500 = load.attempts.filter((a) => a.status === 500);
    return {
      seed: opts.seed,
      rate: opts.rate,
      steady,
      faults,
      attempts: load.attempts.length,
      serverErrors: errors500.length,
      serverErrorSamples: tally(errors500.map((a) => `${a.step} ${a.code ?? "?"}`)),
      refusals: tally(load.flows.filter((f) => f.state === "refused").map((f) => `${f.kind} ${f.lastStatus} ${f.lastCode ?? "?"}`)),
      skipped: load.skipped,
      crashes: stack.instances.flatMap((i) => i.crashes.map((x) => `${i.id}: ${x}`)),
      unsettled,
      end,
      durationSec: Math.round((performance.now() - startedAt) / 1000),
      logDir: stack.dir,
    };
  } finally {
    await sql.end({ timeout: 5 });
    await stack.stop();
    await receiver.close();
  }
}

/** Whether a run met the targets; the reasons it did not. */
export function verdict(r: RunResult, recoveryTargetSec: number): string[] {
  const why: string[] = [];
  if (r.end.lost > 0) why.push(`${r.end.lost} lost`);
  if (r.end.doubled > 0 || r.end.duplicateReferences > 0) why.push(`${r.end.doubled + r.end.duplicateReferences} doubled`);
  if (!r.end.invariants.ok) why.push(`${r.end.invariants.violations} invariant violations`);
  if (r.end.retried.stillFailing + r.end.retried.broken > 0)
    why.push(`${r.end.retried.stillFailing + r.end.retried.broken} failed flows did not complete on retry`);
  if (r.end.refusedButMoved > 0) why.push(`${r.end.refusedButMoved} refused flows moved money`);
  if (r.refusals.length > 0) why.push(`flows refused: ${r.refusals.join(", ")}`);
  if (r.end.webhooks.missing > 0 || r.end.webhooks.unstableIds > 0 || r.end.webhooks.badSignatures > 0) {
    why.push(
      `webhooks: ${r.end.webhooks.missing} missing, ${r.end.webhooks.unstableIds} with several delivery ids, ${r.end.webhooks.badSignatures} bad signatures`,
    );
  }
  if (r.serverErrors > 0) why.push(`${r.serverErrors} × 500`);
  for (const f of r.faults) if (f.recoverySec > recoveryTargetSec) why.push(`${f.name}: recovered in ${f.recoverySec} s`);
  if (r.crashes.length > 0) why.push(`processes died on their own: ${r.crashes.join("; ")}`);
  if (r.steady.failedAttempts > 0) why.push(`${r.steady.failedAttempts} failed requests before any fault`);
  return why;
}

/** The per-fault table and the end state, as printed by `npm run chaos`. */
export function report(r: RunResult): string[] {
  const lines = ["fault                                   at s  failed req  500s  failed flows  recovery s  restart s"];
  for (const f of r.faults) {
    lines.push(
      `${f.name.padEnd(38)} ${f.at.toFixed(1).padStart(5)} ${String(f.failedAttempts).padStart(11)} ${String(f.serverErrors).padStart(5)} ${String(f.failedFlows).padStart(13)} ${f.recoverySec.toFixed(1).padStart(11)} ${f.restartSec === undefined ? "         -" : f.restartSec.toFixed(1).padStart(10)}`,
    );
  }
  for (const f of r.faults) if (f.failures.length > 0) lines.push(`  ${f.name}: ${f.failures.join(", ")}`);
  const e = r.end;
  lines.push(
    `before any fault: ${r.steady.failedAttempts} failed requests`,
    `flows: ${e.flows.total} (${e.flows.ok} ok, ${e.flows.refused} refused${r.refusals.length > 0 ? ` [${r.refusals.join(", ")}]` : ""}, ${e.flows.failed} failed after ${r.attempts} requests; ${r.skipped} not started while ${IN_FLIGHT_MAX} were in flight)`,
    `failed flows sent again with the same keys: ${e.retried.completed} completed once, ${e.retried.refusedClean} refused having moved nothing, ${e.retried.stillFailing} still failing, ${e.retried.broken} inconsistent`,
    `ledger: ${e.lost} lost, ${e.doubled} doubled, ${e.duplicateReferences} duplicate references, ${e.refusedButMoved} refused-but-moved; invariants ${e.invariants.ok ? "ok" : `FAILED (${e.invariants.violations}): ${JSON.stringify(e.invariants.first)}`}`,
    `webhooks: ${e.webhooks.delivered}/${e.webhooks.expected} public events received (${e.webhooks.received} deliveries), ${e.webhooks.unstableIds} with more than one delivery id, ${e.webhooks.badSignatures} bad signatures`,
    `500 answers: ${r.serverErrors}${r.serverErrorSamples.length > 0 ? ` (${r.serverErrorSamples.join(", ")})` : ""}`,
    `processes that died on their own: ${r.crashes.length === 0 ? "none" : r.crashes.join("; ")}`,
    `not settled at the end: ${
      Object.entries(r.unsettled)
        .filter(([, n]) => n > 0)
        .map(([k, n]) => `${k} ${n}`)
        .join(", ") || "nothing"
    }`,
  );
  for (const ex of e.examples) lines.push(`  e.g. ${ex}`);
  return lines;
}

export { seededRandom };
