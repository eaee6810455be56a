// A NATS JetStream cluster on loopback: N nats-server nodes (three by default, the smallest cluster that keeps a
// replicated stream writable with one node gone), each with its own store, client, route and monitoring port, the
// same configuration file (the permission matrix's authorization) and routes to all the others. Used by the test
// harness, the dev stack (DEV_NATS_CLUSTER=3) and the fault-injection runs that kill one node at a time.
import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { freePort, pollIntervalMs, sleep } from "./host.ts";
import { startNats, type NatsServer } from "./child.ts";

export interface StartNatsClusterOptions {
  /** Each node keeps its store under `<dir>/<node name>`. */
  dir: string;
  /** How many nodes (default 3). */
  nodes?: number;
  /** The cluster's name (default `treasury`). */
  name?: string;
  /** Every node's configuration file (e.g. natsServerAuthorization()); the command line's ports win over it. */
  configFile?: string;
  /** Ports per node, in order; free ports (freePort()) where not given. */
  ports?: { client: number; route: number; monitor: number }[];
  /** Each node appends its output to `<logDir>/<node name>.log`. */
  logDir?: string;
  /** Each node writes its pid to `<dir>/<node name>.pid`; a node left by an earlier run is stopped through it. */
  pidFiles?: boolean;
  /** Own process groups (dev stack: a terminal Ctrl-C reaches only the parent). */
  detached?: boolean;
  /** How long start() and each node's restart wait for the cluster to be healthy (default 60 000 ms). */
  healthyTimeoutMs?: number;
}

export interface NatsClusterNode {
  /** `server_name`, as JetStream names stream and meta leaders (`n1`, `n2`, …). */
  name: string;
  port: number;
  routePort: number;
  monitorPort: number;
  url: string;
  /** The running process's pid; undefined while the node is down. */
  pid: number | undefined;
}

export interface NatsCluster {
  /** Every node's client URL, comma-separated: what NATS_URL names for a service (service-kit's parseNatsUrl). */
  url: string;
  nodes: readonly NatsClusterNode[];
  /** kill -9 of one node; resolves once it has exited, with the pid it had. */
  kill(name: string): Promise<number>;
  /** Starts a node that is down again, on its ports and store, and waits until it is current with the others. */
  start(name: string): Promise<void>;
  /** Resolves once every running node's /healthz answers 200: a meta leader is known and its streams are current. */
  healthy(timeoutMs?: number): Promise<void>;
  /** The node leading a stream's replicas (asked of the running nodes' monitoring), or undefined without one. */
  streamLeader(stream: string): Promise<string | undefined>;
  /** The node leading the JetStream meta group, or undefined while none is elected. */
  metaLeader(): Promise<string | undefined>;
  /** How many clients a running node has connected (its monitoring's /varz), or undefined when it does not answer. */
  clients(name: string): Promise<number | undefined>;
  /** Stops every node (SIGTERM, then SIGKILL); idempotent. */
  stop(): Promise<void>;
}

const DEFAULT_NODES = 3;
const DEFAULT_HEALTHY_TIMEOUT_MS = 60_000;
const MONITOR_REQUEST_TIMEOUT_MS = 2_000;

/** Starts every node, then waits until the cluster has elected its meta leader and each node is current. */
export async function startNatsCluster(opts: StartNatsClusterOptions): Promise<NatsCluster> {
  const cluster = new LoopbackCluster(opts, await planNodes(opts));
  try {
    // Every node must be up before any can elect: a single node never has the quorum of the meta group.
    await Promise.all(cluster.nodes.map((n) => cluster.launch(n)));
    await cluster.healthy();
  } catch (err) {
    await cluster.stop();
    throw err;
  }
  return cluster;
}

/** Names and ports of the nodes: the given ports, else free ones. */
async function planNodes(opts: StartNatsClusterOptions): Promise<NatsClusterNode[]> {
  const nodes: NatsClusterNode[] = [];
  for (let i = 0; i < (opts.nodes ?? DEFAULT_NODES); i++) {
    const given = opts.ports?.[i];
    const port = given?.client ?? (await freePort());
    nodes.push({
      name: `n${i + 1}`,
      port,
      routePort: given?.route ?? (await freePort()),
      monitorPort: given?.monitor ?? (await freePort()),
      url: `nats://127.0.0.1:${port}`,
      pid: undefined,
    });
  }
  return nodes;
}

class LoopbackCluster implements NatsCluster {
  readonly url: string;
  private readonly servers = new Map<string, NatsServer>();

  constructor(
    private readonly opts: StartNatsClusterOptions,
    readonly nodes: NatsClusterNode[],
  ) {
    this.url = nodes.map((n) => n.url).join(",");
  }

  async launch(node: NatsClusterNode): Promise<void> {
    const { opts } = this;
    const storeDir = join(resolve(opts.dir), node.name);
    mkdirSync(storeDir, { recursive: true });
    const server = await startNats({
      storeDir,
      port: node.port,
      serverName: node.name,
      monitorPort: node.monitorPort,
      cluster: { name: opts.name ?? "treasury", port: node.routePort, routes: this.nodes.map((n) => n.routePort) },
      ...(opts.configFile !== undefined ? { configFile: opts.configFile } : {}),
      ...(opts.logDir !== undefined ? { logFile: join(opts.logDir, `${node.name}.log`) } : {}),
      ...(opts.pidFiles === true ? { pidFile: join(resolve(opts.dir), `${node.name}.pid`) } : {}),
      ...(opts.detached !== undefined ? { detached: opts.detached } : {}),
    });
    this.servers.set(node.name, server);
    node.pid = server.pid;
  }

  async kill(name: string): Promise<number> {
    const node = this.find(name);
    const server = this.servers.get(name);
    if (server === undefined || server.pid === undefined) throw new Error(`NATS node ${name} is not running`);
    const pid = server.pid;
    process.kill(pid, "SIGKILL");
    await server.stop();
    this.servers.delete(name);
    node.pid = undefined;
    return pid;
  }

  async start(name: string): Promise<void> {
    if (this.servers.has(name)) throw new Error(`NATS node ${name} is already running`);
    await this.launch(this.find(name));
    await this.healthy();
  }

  healthy(timeoutMs = this.opts.healthyTimeoutMs ?? DEFAULT_HEALTHY_TIMEOUT_MS): Promise<void> {
    return waitHealthy(this.running(), timeoutMs);
  }

  async streamLeader(stream: string): Promise<string | undefined> {
    for (const node of this.running()) {
      const jsz = await monitor<Jsz>(node, "/jsz?accounts=true&streams=true");
      const found = jsz?.account_details?.flatMap((a) => a.stream_detail ?? []).find((s) => s.name === stream);
      if (found?.cluster?.leader !== undefined && found.cluster.leader !== "") return found.cluster.leader;
    }
    return undefined;
  }

  async metaLeader(): Promise<string | undefined> {
    for (const node of this.running()) {
      const leader = (await monitor<Jsz>(node, "/jsz"))?.meta_cluster?.leader;
      if (leader !== undefined && leader !== "") return leader;
    }
    return undefined;
  }

  async clients(name: string): Promise<number | undefined> {
    return (await monitor<{ connections?: number }>(this.find(name), "/varz"))?.connections;
  }

  async stop(): Promise<void> {
    for (const [name, server] of [...this.servers]) {
      await server.stop().catch(() => {});
      this.servers.delete(name);
      this.find(name).pid = undefined;
    }
  }

  private running(): NatsClusterNode[] {
    return this.nodes.filter((n) => this.servers.has(n.name));
  }

  private find(name: string): NatsClusterNode {
    const node = this.nodes.find((n) => n.name === name);
    if (node === undefined) throw new Error(`no NATS node ${name} (nodes: ${this.nodes.map((n) => n.name).join(", ")})`);
    return node;
  }
}

/** The parts of the monitoring endpoint `/jsz` read here. */
interface Jsz {
  meta_cluster?: { leader?: string };
  account_details?: { stream_detail?: { name: string; cluster?: { leader?: string } }[] }[];
}

async function monitor<T>(node: NatsClusterNode, path: string): Promise<T | undefined> {
  try {
    const res = await fetch(`http://127.0.0.1:${node.monitorPort}${path}`, { signal: AbortSignal.timeout(MONITOR_REQUEST_TIMEOUT_MS) });
    if (!res.ok) {
      await res.body?.cancel();
      return undefined;
    }
    return (await res.json()) as T;
  } catch {
    return undefined;
  }
}

/** /healthz answers 200 once the node knows the meta leader and every stream and consumer it holds is current. */
async function waitHealthy(nodes: NatsClusterNode[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const pending = new Set(nodes);
  let last = "";
  while (pending.size > 0) {
    for (const node of [...pending]) {
      try {
        const res = await fetch(`http://127.0.0.1:${node.monitorPort}/healthz`, { signal: AbortSignal.timeout(MONITOR_REQUEST_TIMEOUT_MS) });
        last = `${node.name}: ${res.status} ${(await res.text()).trim()}`;
        if (res.status === 200) pending.delete(node);
      } catch (err) {
        last = `${node.name}: ${err instanceof Error ? err.message : String(err)}`;
      }
    }
    if (pending.size === 0) return;
    if (Date.now() > deadline) throw new Error(`NATS cluster not healthy within ${timeoutMs} ms (last answer ${last})`);
    await sleep(pollIntervalMs);
  }
}
