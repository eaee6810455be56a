// Proves that under light checkout, refund and payout load, kill -9 of a ledger and of a payments replica, of every
// ledger at once, a crash of nats-server and an immediate restart of PostgreSQL lose nothing, double nothing, break
// no ledger invariant, answer no 500, deliver every public event under one delivery id, and recover without a hand.
// A short cut of `npm run chaos` (bench/chaos.ts) on its own PostgreSQL and nats-server, which it restarts.
import { rmSync } from "node:fs";
import { expect, it } from "vitest";
import { runChaos, type Fault } from "../../bench/chaos-run.ts";
import { expectWhole } from "./chaos-expect.ts";
import type { ServicePlan } from "../../bench/chaos-stack.ts";

const PLAN: ServicePlan[] = [
  { name: "ledger", replicas: 2 },
  { name: "payments", replicas: 2 },
  { name: "payouts", replicas: 1 },
  { name: "refunds", replicas: 1 },
  { name: "webhooks", replicas: 1 },
  { name: "risk", replicas: 1 },
  { name: "gateway", replicas: 1 },
];

const FAULTS: Fault[] = [
  { name: "kill -9 ledger#1", kind: "kill", targets: ["ledger#1"] },
  { name: "restart nats-server (kill -9)", kind: "nats" },
  { name: "kill -9 payments#2", kind: "kill", targets: ["payments#2"] },
  // Risk away: checkouts go ahead (fail open), payouts answer a retryable 503 risk_unavailable (fail closed).
  { name: "kill -9 risk", kind: "kill", targets: ["risk"] },
  { name: "restart PostgreSQL (-m immediate)", kind: "postgres" },
  // The whole ledger away: payments must answer a retryable 503/504, never 500.
  { name: "kill -9 every ledger", kind: "kill", targets: ["ledger#1", "ledger#2"] },
];

it("survives process kills, a NATS crash and a PostgreSQL restart under load with nothing lost or doubled", { timeout: 180_000 }, async () => {
  const r = await runChaos({
    seed: 7,
    rate: 3,
    plan: PLAN,
    faults: FAULTS,
    warmupSec: 3,
    intervalSec: 6,
    cooldownSec: 4,
    quietTimeoutMs: 30_000,
    log: () => {},
  });
  const table = expectWhole(r);
  // Every fault was followed by requests that succeeded again soon after: the system came back by itself. A server
  // restart (PostgreSQL recovering from its WAL, nats-server) can itself take longer than that on a loaded machine,
  // and nothing can succeed before the server is back: there the time counts from its return. The same holds when
  // every replica of a service is killed (the whole ledger): its processes starting again is the server's return.
  const everyReplica = (f: Fault | undefined): boolean => f?.kind === "kill" && f.targets.length > 1;
  for (const [i, f] of r.faults.entries()) {
    const serverBack = FAULTS[i]?.kind === "kill" && !everyReplica(FAULTS[i]) ? 0 : (f.restartSec ?? 0);
    expect(f.recoverySec - serverBack, `${f.name}\n${table}`).toBeLessThan(6);
  }
  // The servers' data and the services' logs are kept only when the run fails.
  rmSync(r.logDir, { recursive: true, force: true });
});
