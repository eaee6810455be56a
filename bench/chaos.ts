/**
 * `npm run chaos`: a reproducible fault-injection run against a private stack on loopback ports. Steady checkout,
 * refund and payout traffic goes through the gateway while, one at a time, every service process is killed with
 * -9 (two ledger and two payments replicas run side by side; the whole ledger is also killed at once),
 * nats-server is killed and started again, and PostgreSQL restarts in immediate mode. A supervisor starts killed
 * services again; nobody intervenes. Prints per fault the requests that failed and the seconds to recover, then
 * the end state: every flow the client saw succeed exactly once in the ledger, every failed flow completed by a
 * retry with its keys or having done nothing, every public event delivered to a loopback receiver under one
 * delivery id, the ledger's invariants, and the 500s. Last line: one JSON object. Exit 1 when a target is missed.
 *
 *   --seed N          the traffic's draws and the fault order (default 1; timing still varies with the machine)
 *   --duration S      seconds of load, faults spread evenly over it (default 240; at least 8 s per fault)
 *   --rate R          flows started per second (default 15)
 *   --nats-cluster N  NATS as a JetStream cluster of N nodes (3; default 1, one nats-server): the EVENTS stream on
 *                     every node (EVENTS_REPLICAS), services connected to all of them, and instead of the restart of
 *                     nats-server a kill -9 of one node that leads nothing and later of the stream's leader
 */
import { parseArgs } from "node:util";
import { allFaults, FULL_PLAN, report, runChaos, seededRandom, verdict } from "./chaos-run.ts";

/** Recovery target per fault: the load's success rate is back within this many seconds. */
export const RECOVERY_TARGET_SEC = 5;
const WARMUP_SEC = 10;
const COOLDOWN_SEC = 10;
const INTERVAL_MIN_SEC = 8;
const QUIET_TIMEOUT_MS = 120_000;

const { values } = parseArgs({
  options: {
    seed: { type: "string", default: "1" },
    duration: { type: "string", default: "240" },
    rate: { type: "string", default: "15" },
    "nats-cluster": { type: "string", default: "1" },
  },
});
const seed = Number(values.seed);
const duration = Number(values.duration);
const rate = Number(values.rate);
const natsCluster = Number(values["nats-cluster"]);
// A JetStream cluster keeps a replicated stream writable with one node gone only from three nodes up.
if (!Number.isInteger(seed) || !(duration > 0) || !(rate > 0) || !(natsCluster === 1 || natsCluster >= 3)) {
  console.error("usage: npm run chaos -- [--seed N] [--duration SECONDS] [--rate FLOWS_PER_SECOND] [--nats-cluster 3]");
  process.exit(2);
}
const faults = allFaults(FULL_PLAN, seededRandom(seed ^ 0x5eed), natsCluster);
const intervalSec = Math.max(INTERVAL_MIN_SEC, (duration - WARMUP_SEC - COOLDOWN_SEC) / faults.length);

const result = await runChaos({
  seed,
  rate,
  plan: FULL_PLAN,
  faults,
  warmupSec: WARMUP_SEC,
  intervalSec,
  cooldownSec: COOLDOWN_SEC,
  quietTimeoutMs: QUIET_TIMEOUT_MS,
  natsCluster,
  log: (l) => console.log(l),
});
for (const line of report(result)) console.log(line);
const missed = verdict(result, RECOVERY_TARGET_SEC);
console.log(
  missed.length === 0
    ? "targets met: 0 lost, 0 doubled, 0 invariant breaks, every fault recovered without a human, 0 × 500"
    : `targets missed: ${missed.join("; ")}`,
);
console.log(
  JSON.stringify({
    seed,
    rate,
    nats_nodes: natsCluster,
    duration_s: result.durationSec,
    faults: result.faults.map((f) => ({
      fault: f.name,
      failed_requests: f.failedAttempts,
      failed_flows: f.failedFlows,
      recovery_s: f.recoverySec,
      restart_s: f.restartSec === undefined ? null : Math.round(f.restartSec * 10) / 10,
    })),
    flows: result.end.flows,
    lost: result.end.lost,
    doubled: result.end.doubled + result.end.duplicateReferences,
    failed_flows_retried: result.end.retried,
    webhooks: result.end.webhooks,
    invariants: result.end.invariants.ok ? "ok" : "failed",
    http_500: result.serverErrors,
    crashes: result.crashes.length,
    max_recovery_s: Math.max(0, ...result.faults.map((f) => f.recoverySec)),
    targets_met: missed.length === 0,
  }),
);
if (missed.length > 0) process.exitCode = 1;
