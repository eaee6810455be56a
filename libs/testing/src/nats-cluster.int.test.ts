// Proves the harness's three-node JetStream cluster: every node runs the permission matrix, the migrate step makes the
// EVENTS stream with three replicas, and events published through the node list while one node is killed with -9
// (first one that leads nothing, then the stream's leader) are all stored exactly once, with a new leader elected.
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventsStreamName, NATS_MIGRATIONS_USER } from "@treasury/contracts";
import { connectNats, migrateEventsStream, type NatsConnection } from "@treasury/service-kit";
import { generateTestNatsAuth, TEST_NATS_SUPERUSER, withNatsCredentials } from "./nats-auth.ts";
import { makeScratchDir, startNatsCluster, type NatsCluster } from "./servers.ts";
import { waitFor } from "./wait.ts";

const prefix = "tcluster.";
const stream = eventsStreamName(prefix);
const publishAttemptsMax = 40;

let dir: string;
let cluster: NatsCluster;
let nc: NatsConnection;
const auth = generateTestNatsAuth();

beforeAll(async () => {
  dir = makeScratchDir("treasury-nats-cluster-");
  const configFile = join(dir, "nats.conf");
  writeFileSync(configFile, auth.config, { mode: 0o600 });
  cluster = await startNatsCluster({ dir, configFile, logDir: dir });
  const migrations = { user: NATS_MIGRATIONS_USER, password: auth.passwords[NATS_MIGRATIONS_USER] ?? "" };
  await migrateEventsStream({ url: cluster.url, name: "cluster-migrate", ...migrations }, prefix, 3);
  nc = await connectNats({ url: withNatsCredentials(cluster.url, TEST_NATS_SUPERUSER, auth.superuserPassword), name: "cluster-test" });
}, 90_000);

afterAll(async () => {
  await nc?.close();
  await cluster?.stop();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

/** Publishes one event with its id as the message id, again after a failure (a leader election), as the outbox relay does. */
async function publish(i: number): Promise<void> {
  const js = jetstream(nc, { timeout: 2_000 });
  for (let attempt = 1; ; attempt++) {
    try {
      await js.publish(`${prefix}evt.cluster.probe`, JSON.stringify({ i }), { msgID: `evt_${i}` });
      return;
    } catch (err) {
      if (attempt >= publishAttemptsMax) throw err;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

describe("three-node JetStream cluster", () => {
  it("runs the permission matrix on every node", async () => {
    // Proves each node refuses a wrong password and lets an identity in with its own, on its own client port.
    for (const node of cluster.nodes) {
      await expect(connect({ servers: node.url, user: "ledger", pass: auth.passwords["payments"] ?? "", reconnect: false })).rejects.toThrow(/Authorization/i);
      const ok = await connect({ servers: node.url, user: "ledger", pass: auth.passwords["ledger"] ?? "", reconnect: false });
      await ok.close();
    }
  });

  it("keeps every event exactly once while a follower and then the stream leader are killed with -9", { timeout: 120_000 }, async () => {
    const jsm = await jetstreamManager(nc);
    expect((await jsm.streams.info(stream)).config.num_replicas).toBe(3);
    let next = 0;
    const batch = async (n: number): Promise<void> => {
      for (let k = 0; k < n; k++) await publish(next++);
    };
    await batch(50);

    const leader = await waitFor(() => cluster.streamLeader(stream).then((l) => l ?? false));
    const follower = cluster.nodes.find((n) => n.name !== leader);
    if (follower === undefined) throw new Error("no follower");
    await cluster.kill(follower.name);
    await batch(50);
    await cluster.start(follower.name);

    const killedLeader = await waitFor(() => cluster.streamLeader(stream).then((l) => l ?? false));
    await cluster.kill(killedLeader);
    await batch(50);
    const newLeader = await waitFor(() => cluster.streamLeader(stream).then((l) => (l !== undefined && l !== killedLeader ? l : false)), { timeoutMs: 30_000 });
    expect(newLeader).not.toBe(killedLeader);
    await cluster.start(killedLeader);

    // 150 distinct ids were acknowledged: the stream holds each once, and sending one again is recognised as a duplicate.
    const info = await jsm.streams.info(stream);
    expect(info.state.messages).toBe(150);
    const again = await jetstream(nc).publish(`${prefix}evt.cluster.probe`, "{}", { msgID: "evt_7" });
    expect(again.duplicate).toBe(true);
    expect((await jsm.streams.info(stream)).state.messages).toBe(150);
    // The restarted leader caught up: every node's replica is current again.
    await cluster.healthy();
  });
});
