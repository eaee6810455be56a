// Proves that on a three-node JetStream cluster (EVENTS stream with three replicas, every service connected to all
// nodes), under checkout, refund and payout load, kill -9 of a NATS node that leads nothing and then of the EVENTS
// stream's leader lose nothing, double nothing, break no ledger invariant, answer no 500 and deliver every public
// event once: the load goes on over the two nodes left while the killed one is down. A short cut of
// `npm run chaos -- --nats-cluster 3` (bench/chaos.ts) on its own PostgreSQL and cluster.
import { rmSync } from "node:fs";
import { expect, it } from "vitest";
import { NATS_NODE_FAULTS, runChaos } from "../../bench/chaos-run.ts";
import { expectWhole } from "./chaos-expect.ts";
import type { ServicePlan } from "../../bench/chaos-stack.ts";

const PLAN: ServicePlan[] = [
  { name: "ledger", replicas: 1 },
  { name: "payments", replicas: 1 },
  { name: "payouts", replicas: 1 },
  { name: "refunds", replicas: 1 },
  { name: "webhooks", replicas: 1 },
  { name: "risk", replicas: 1 },
  { name: "gateway", replicas: 1 },
];

/** Seconds within which the load succeeds again after a node's kill: a stream leader's election and the clients' reconnect. */
const NODE_LOSS_RECOVERY_MAX_S = 8;

it("keeps flows whole while one NATS node and then the stream leader are killed with -9", { timeout: 180_000 }, async () => {
  const lines: string[] = [];
  const r = await runChaos({
    seed: 11,
    rate: 3,
    plan: PLAN,
    faults: NATS_NODE_FAULTS,
    natsCluster: 3,
    warmupSec: 3,
    intervalSec: 12,
    cooldownSec: 4,
    quietTimeoutMs: 30_000,
    log: (l) => lines.push(l),
  });
  const table = expectWhole(r);
  expect(r.faults.map((f) => f.name)).toEqual(NATS_NODE_FAULTS.map((f) => f.name));
  // Each killed node had services connected to it, and the second was the stream's leader, which another replaced.
  const kills = lines.flatMap((l) => [...l.matchAll(/NATS node (\w+) killed \(pid \d+, (\d+) clients; stream leader (\w+)/g)]);
  expect(kills, lines.join("\n")).toHaveLength(2);
  const [follower, leader] = kills.map((m) => ({ node: m[1], clients: Number(m[2]), streamLeader: m[3] }));
  expect(follower?.node, lines.join("\n")).not.toBe(follower?.streamLeader);
  expect(leader?.node, lines.join("\n")).toBe(leader?.streamLeader);
  for (const k of [follower, leader]) expect(k?.clients, lines.join("\n")).toBeGreaterThan(0);
  const leaderAfter = lines.map((l) => /NATS node (\w+) back; stream leader now (\w+)/.exec(l)).filter((m) => m !== null)[1];
  expect(leaderAfter?.[2], lines.join("\n")).not.toBe(leader?.node);
  // Unlike a single server's restart, nothing waits for the killed node: the time counts from the kill itself.
  for (const f of r.faults) expect(f.recoverySec, `${f.name}\n${table}`).toBeLessThan(NODE_LOSS_RECOVERY_MAX_S);
  // The servers' data and the services' logs are kept only when the run fails.
  rmSync(r.logDir, { recursive: true, force: true });
});
