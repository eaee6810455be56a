/**
 * The NATS connection's health on a service's /metrics: whether the client is connected, how often it lost and
 * regained its server (from the client's status events), and whether JetStream answers for the EVENTS stream.
 */
import { jetstreamManager } from "@nats-io/jetstream";
import type { JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { Counter, Gauge } from "prom-client";
import type { Registry } from "prom-client";
import { withTimeout } from "./metrics.ts";

export interface NatsMetricsOptions {
  /** The stream whose availability the JetStream gauge reports (the service's EVENTS stream). */
  stream: string;
}

/**
 * Registers the connection's series on `registry` and follows `nc`'s status events until it closes. Several
 * registries may follow one connection (services sharing it in a test process); each sees every event.
 */
export function registerNatsMetrics(registry: Registry, nc: NatsConnection, opts: NatsMetricsOptions): void {
  let connected = !nc.isClosed();
  new Gauge({
    name: "nats_connected",
    help: "1 while the NATS client is connected to a server, 0 while it is disconnected, reconnecting or closed",
    registers: [registry],
    collect() {
      this.set(connected && !nc.isClosed() ? 1 : 0);
    },
  });
  const disconnects = new Counter({
    name: "nats_disconnects_total",
    help: "Times the NATS client lost its server",
    registers: [registry],
  });
  const reconnects = new Counter({
    name: "nats_reconnects_total",
    help: "Times the NATS client connected to a server again after losing one",
    registers: [registry],
  });
  let jsm: Promise<JetStreamManager> | undefined;
  new Gauge({
    name: "nats_jetstream_available",
    help: "1 when JetStream answered for the EVENTS stream at this scrape, 0 when it refused or did not answer in time",
    registers: [registry],
    async collect() {
      // Without the API check the manager is built locally; asking for the stream is the check.
      jsm ??= jetstreamManager(nc, { checkAPI: false });
      const answered = await withTimeout(jsm.then((m) => m.streams.info(opts.stream))).then(
        () => true,
        () => false,
      );
      this.set(answered ? 1 : 0);
    },
  });
  void followStatus(nc, {
    disconnected: () => {
      connected = false;
      disconnects.inc();
    },
    reconnected: () => {
      connected = true;
      reconnects.inc();
    },
    closed: () => {
      connected = false;
    },
  });
}

/** Reads the client's status events until the connection closes (the iterator then ends). */
async function followStatus(nc: NatsConnection, on: { disconnected(): void; reconnected(): void; closed(): void }): Promise<void> {
  try {
    for await (const s of nc.status()) {
      if (s.type === "disconnect") on.disconnected();
      else if (s.type === "reconnect") on.reconnected();
      else if (s.type === "close") on.closed();
    }
  } catch {
    // The iterator only ends with the connection; either way there is nothing more to follow.
  }
  on.closed();
}
