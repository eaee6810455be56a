// Proves createService end to end: health/readiness/metrics endpoints, the NATS health subject, unbuilt routes
// answering not_implemented, outbox → consumer wiring, and a graceful stop that finishes in-flight requests
// while refusing new ones.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { NatsConnection } from "@nats-io/transport-node";
import { DomainError, healthSubject, rpcSubject } from "@treasury/contracts";
import type { AuthContext } from "@treasury/contracts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { serviceDatabaseUrl, withTx } from "./db.ts";
import { migrateAll } from "./migrate.ts";
import { connectNats, ensureEventsStream } from "./nats.ts";
import { writeOutbox } from "./outbox-write.ts";
import { rpcCall } from "./rpc-client.ts";
import { createService } from "./service.ts";
import type { Service, ServiceConfig } from "./service.ts";
import { captureLogger, createTestDatabase, deleteEventsStream, gate, randomPrefix, TEST_NATS_URL, waitFor } from "./test-support.ts";
import type { TestDatabase } from "./test-support.ts";

const prefix = randomPrefix();
const { log, lines } = captureLogger("payments");
const auth: AuthContext = { org_id: "org_1", livemode: false, key_id: "key_1", scopes: null, request_id: "req_1" };
let db: TestDatabase;
let rootDir: string;
let client: NatsConnection;
let svc: Service<ServiceConfig>;
let base: string;
const handled: string[] = [];
/** What the start hook and the job saw: the hook runs once, before ready; the job's passes only after start. */
const startOrder: string[] = [];
let jobPasses = 0;
let slowCalls = 0;
let slowStarted: () => void = () => {};
/** Holds createWalletSession until the test opens it. */
const held = gate();

beforeAll(async () => {
  db = await createTestDatabase();
  rootDir = await mkdtemp(join(tmpdir(), "kit-service-"));
  await migrateAll({ adminUrl: db.url, rootDir, services: ["payments"] });
  client = await connectNats({ url: TEST_NATS_URL, name: "service-test-client" });
  // The migrate step's work in a deployment: services only wait for the stream.
  await ensureEventsStream(client, prefix);
  svc = await createService({
    name: "payments",
    env: { DATABASE_URL: serviceDatabaseUrl(db.url, "payments"), NATS_URL: TEST_NATS_URL, NATS_PREFIX: prefix, SHUTDOWN_TIMEOUT_MS: "5000" },
    deps: { log },
  });
  svc.handle("createCheckoutSession", async () => ({ status: 201, body: { id: "cs_1" } }));
  svc.handle("createWalletSession", async () => {
    slowCalls += 1;
    slowStarted();
    await held.wait;
    return { body: { finished: true } };
  });
  svc.consume({
    durable: "payments_test",
    filterSubject: `${prefix}evt.>`,
    handler: async (evt, tx) => {
      await tx`select 1`;
      handled.push(evt.id);
    },
  });
  svc.handleInternal(
    "internalEcho",
    (p) => {
      if (typeof p !== "object" || p === null || typeof (p as { n?: unknown }).n !== "number") throw new DomainError("validation_error", "n must be a number");
      return (p as { n: number }).n;
    },
    async (n) => ({ doubled: n * 2 }),
  );
  svc.handlePage("page.test", async (req) => ({ ok: true, status: 200, body: { path_id: req.params["id"] ?? null } }));
  svc.onStart(() => void startOrder.push(lines.some((l) => l["msg"] === "ready") ? "hook after ready" : "hook before ready"));
  svc.every({ name: "test-job", intervalMs: 5, run: async () => void (jobPasses += 1) });
  const { healthPort } = await svc.start();
  base = `http://127.0.0.1:${healthPort}`;
});

afterAll(async () => {
  held.open();
  await svc?.stop();
  if (client) await deleteEventsStream(client, prefix);
  await client?.drain();
  await db?.drop();
  if (rootDir) await rm(rootDir, { recursive: true, force: true });
});

const call = (op: string, timeoutMs = 2000) => rpcCall(client, rpcSubject(prefix, "payments", op), { auth, params: {}, query: {}, body: {} }, { timeoutMs });

describe("createService", () => {
  it("logs one ready line with the bound health port", () => {
    const ready = lines.filter((l) => l["msg"] === "ready");
    expect(ready).toHaveLength(1);
    expect(ready[0]?.["health_port"]).toBe(Number(new URL(base).port));
    expect(ready[0]?.["service"]).toBe("payments");
  });

  it("serves /healthz and /readyz", async () => {
    const health = await fetch(`${base}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: "ok" });
    const ready = await fetch(`${base}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: "ok", checks: { started: "ok", shutdown: "ok", database: "ok", nats: "ok" } });
  });

  it("answers 503 on /readyz while an added readiness check fails", async () => {
    svc.readyChecks.push(async () => {
      throw new Error("ledger unreachable");
    });
    try {
      const ready = await fetch(`${base}/readyz`);
      expect(ready.status).toBe(503);
      expect(await ready.json()).toMatchObject({ status: "unavailable", checks: { check_0: "ledger unreachable", database: "ok" } });
    } finally {
      svc.readyChecks.pop();
    }
  });

  it("answers the NATS health subject and not_implemented for unbuilt route operations", async () => {
    expect(await rpcCall(client, healthSubject(prefix, "payments"), {}, { timeoutMs: 2000 })).toEqual({ ok: true, status: 200, body: { status: "ok" } });
    expect(await call("spendSharedWallet")).toMatchObject({ ok: false, error: { code: "not_implemented" } });
  });

  it("exports rpc_duration_seconds on /metrics after an RPC", async () => {
    expect(await call("createCheckoutSession")).toEqual({ ok: true, status: 201, body: { id: "cs_1" } });
    const res = await fetch(`${base}/metrics`);
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toMatch(/rpc_duration_seconds_count\{[^}]*operation="createCheckoutSession"[^}]*outcome="ok"[^}]*\} 1/);
    expect(text).toMatch(/errors_total\{[^}]*code="not_implemented"/);
    expect(text).toMatch(/outbox_lag_seconds\{service="payments"\} \d/);
    expect(text).toMatch(/consumer_pending\{[^}]*durable="payments_test"/);
    // The process's own runtime figures, labelled with the service like the rest.
    for (const name of ["process_cpu_seconds_total", "nodejs_heap_size_used_bytes", "nodejs_eventloop_lag_p99_seconds"]) {
      expect(text).toMatch(new RegExp(`^${name}\\{service="payments"\\} [\\d.e+-]+$`, "m"));
    }
  });

  it("runs its start hooks once before ready, its jobs from then on, and decodes internal and page payloads", async () => {
    expect(startOrder).toEqual(["hook before ready"]);
    await waitFor(() => jobPasses >= 2, 5000, "the job's passes");
    expect(() => svc.onStart(() => {})).toThrow(/after start/);
    const internal = (payload: unknown) => rpcCall(client, `${prefix}svc.payments.internalEcho`, payload, { timeoutMs: 2000 });
    expect(await internal({ n: 21 })).toEqual({ ok: true, status: 200, body: { doubled: 42 } });
    expect(await internal({ n: "x" })).toMatchObject({ ok: false, error: { code: "validation_error" } });
    const page = (payload: unknown) => rpcCall(client, `${prefix}svc.payments.page.test`, payload, { timeoutMs: 2000 });
    const pageRequest = {
      method: "GET",
      params: { id: "p1" },
      query: {},
      form: {},
      request_id: "req_p",
      client_ip: "127.0.0.1",
      alt_base_url: "http://alt.test",
    };
    expect(await page(pageRequest)).toEqual({ ok: true, status: 200, body: { path_id: "p1" } });
    expect(await page({ params: {} })).toMatchObject({ ok: false, error: { code: "validation_error" } });
  });

  it("relays its outbox to its consumers", async () => {
    const id = await withTx(svc.sql, (tx) => writeOutbox(tx, "payments", { type: "sandbox.test", org_id: "org_1", livemode: false, data: {} }));
    await waitFor(() => handled.includes(id), 5000, "consumer to handle the event");
  });

  it("finishes an in-flight request on stop, refuses new ones, then reports not ready", async () => {
    const started = new Promise<void>((resolve) => (slowStarted = resolve));
    const inFlight = call("createWalletSession", 3000);
    await started;
    const stopping = svc.stop();

    const ready = await fetch(`${base}/readyz`);
    expect(ready.status).toBe(503);
    expect(await ready.json()).toMatchObject({ checks: { shutdown: "shutting down" } });
    // A payload that is not a request never reaches the handler: answered validation_error while the
    // service still takes requests on the subject, service_unavailable once it has stopped.
    const probe = async (): Promise<string> => {
      const r = await rpcCall(client, rpcSubject(prefix, "payments", "createWalletSession"), {}, { timeoutMs: 500 });
      return r.ok ? "ok" : r.error.code;
    };
    await waitFor(async () => (await probe()) === "service_unavailable", 3000, "the service to stop taking requests");
    const late = await call("createWalletSession", 500);
    expect(late.ok).toBe(false);
    expect(late.ok ? "" : late.error.code).toBe("service_unavailable");

    held.open();
    expect(await inFlight).toEqual({ ok: true, status: 200, body: { finished: true } });
    await stopping;
    expect(slowCalls).toBe(1);
    expect(svc.nc.isClosed()).toBe(true);
    await expect(fetch(`${base}/healthz`)).rejects.toThrow();
  });
});
