// Proves the image's one build step (deploy/build.sh, which deploy/Dockerfile runs) yields a tree that works in
// production: on a copy of the build context the .dockerignore allows, it compiles every service, installs
// production dependencies only (no tsx), the compiled migrate command migrates an empty database, every service
// starts with the Dockerfile's command and environment, answers /readyz, and the API answers through the
// gateway with a key made by the compiled operator CLI, and a live checkout completes from the card processor's
// signed event (its official package loaded from the production node_modules, its API played on loopback).
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import postgres from "postgres";
import { SERVICES, type ServiceName } from "@treasury/contracts";
import { generateKeyRingEntry, serviceDatabaseUrl } from "@treasury/service-kit";
import { freePort, makeScratchDir, repoRoot, setupTestEnv, waitFor, type TestEnv } from "@treasury/testing";
import { checkoutSessionObject, processorEvent, sendWebhook, signed, startProcessorStandIn, type ProcessorStandIn } from "../e2e/processor-stand-in.ts";
import { DEPLOYED_MALLOC_ENV } from "../../bench/lib/processes.ts";
import { copyContext, makeIgnore, parseDockerfile, stageCmd, stageEnv, type Stage } from "./dockerfile.ts";
import { adminNatsUrl } from "../e2e/admin-run.ts";

const root = repoRoot();
const buildTimeoutMs = 240_000;
const readyTimeoutMs = 30_000;

interface Running {
  name: ServiceName;
  proc: ChildProcess;
  healthPort: number;
  lines: string[];
  exited: Promise<number | null>;
}

/** Runs a command to its end; resolves with its exit code and output. */
function run(cmd: string, args: string[], opts: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs: number }): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const proc = spawn(cmd, args, { cwd: opts.cwd, env: opts.env, stdio: ["ignore", "pipe", "pipe"], timeout: opts.timeoutMs });
    let out = "";
    proc.stdout.on("data", (d: Buffer) => (out += d.toString()));
    proc.stderr.on("data", (d: Buffer) => (out += d.toString()));
    proc.once("error", reject);
    proc.once("exit", (code) => resolve({ code, out }));
  });
}

/** The environment a container gets: nothing from this test process but PATH and HOME. */
function containerEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  return { PATH: process.env["PATH"] ?? "/usr/bin:/bin", HOME: process.env["HOME"] ?? "/tmp", ...extra };
}

let env: TestEnv;
let scratch = "";
let context = "";
let out = "";
let build: { code: number | null; out: string } = { code: null, out: "" };
let runtime: Stage;
let imageAdminUrl = "";
const imageDb = `img_${Date.now().toString(36)}`;
const running: Running[] = [];
let gatewayPort = 0;
let processor: ProcessorStandIn;
const webhookSecret = `whsec_image_${Date.now().toString(36)}`;

beforeAll(async () => {
  env = await setupTestEnv();
  processor = await startProcessorStandIn();
  scratch = makeScratchDir("treasury-image-");
  context = join(scratch, "context");
  out = join(scratch, "app");
  copyContext(root, context, makeIgnore(readFileSync(join(root, ".dockerignore"), "utf8")));
  const stages = parseDockerfile(readFileSync(join(root, "deploy/Dockerfile"), "utf8"));
  const last = stages.at(-1);
  if (last === undefined) throw new Error("deploy/Dockerfile has no stage");
  runtime = last;
  // What the build stage runs, with the build's own NODE_ENV left as the base image has it (unset).
  build = await run("bash", ["deploy/build.sh", out], { cwd: context, env: containerEnv({}), timeoutMs: buildTimeoutMs });
  const admin = postgres(env.adminUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database "${imageDb}"`);
  await admin.end({ timeout: 5 });
  const url = new URL(env.adminUrl);
  url.pathname = `/${imageDb}`;
  imageAdminUrl = url.toString();
}, buildTimeoutMs + 30_000);

afterAll(async () => {
  for (const r of running) r.proc.kill("SIGKILL");
  await Promise.all(running.map((r) => r.exited));
  if (imageAdminUrl !== "") {
    const admin = postgres(env.adminUrl, { max: 1, onnotice: () => {} });
    await admin.unsafe(`drop database if exists "${imageDb}" with (force)`);
    await admin.end({ timeout: 5 });
  }
  await processor?.close();
  await env?.cleanup();
  if (scratch !== "") rmSync(scratch, { recursive: true, force: true });
});

/** Starts one service from the built tree with the runtime stage's command, environment and working folder. */
async function startFromImage(name: ServiceName, extra: Record<string, string>): Promise<Running> {
  const healthPort = await freePort();
  const [cmd = "", ...args] = stageCmd(runtime);
  const vars = containerEnv({
    ...stageEnv(runtime),
    SERVICE: name,
    DATABASE_URL: serviceDatabaseUrl(imageAdminUrl, name),
    NATS_URL: env.natsUrl,
    NATS_PREFIX: env.prefix,
    HEALTH_HOST: "127.0.0.1",
    HEALTH_PORT: String(healthPort),
    LOG_LEVEL: "info",
    ...extra,
  });
  const proc = spawn(cmd, args, { cwd: out, env: vars, stdio: ["ignore", "pipe", "pipe"] });
  const lines: string[] = [];
  for (const stream of [proc.stdout, proc.stderr]) createInterface({ input: stream }).on("line", (l) => lines.push(l));
  const exited = new Promise<number | null>((resolve) => proc.once("exit", (code) => resolve(code)));
  const r: Running = { name, proc, healthPort, lines, exited };
  running.push(r);
  return r;
}

async function readyz(r: Running): Promise<number> {
  if (r.proc.exitCode !== null) throw new Error(`${r.name} exited with ${r.proc.exitCode}:\n${r.lines.slice(-20).join("\n")}`);
  const res = await fetch(`http://127.0.0.1:${r.healthPort}/readyz`, { signal: AbortSignal.timeout(1_000) });
  await res.body?.cancel();
  return res.status;
}

/** The compiled operator CLI, run as the image runs it (a NATS client of the services); its last output line is JSON. */
async function cli(...args: string[]): Promise<Record<string, string>> {
  const r = await run("node", ["dist/admin.js", ...args], {
    cwd: out,
    env: containerEnv({ ...stageEnv(runtime), NATS_URL: adminNatsUrl(env), NATS_PREFIX: env.prefix }),
    timeoutMs: 30_000,
  });
  expect(r.code, r.out).toBe(0);
  return JSON.parse(r.out.trim().split("\n").at(-1) ?? "{}") as Record<string, string>;
}

describe("the production image", () => {
  it("is built by deploy/build.sh and runs compiled JavaScript as an unprivileged user with NODE_ENV=production", () => {
    const stages = parseDockerfile(readFileSync(join(root, "deploy/Dockerfile"), "utf8"));
    expect(stages.length).toBeGreaterThanOrEqual(2);
    const runs = stages.flatMap((s) => s.instructions.filter((i) => i.op === "RUN").map((i) => i.args));
    expect(
      runs.some((r) => /deploy\/build\.sh\b/.test(r)),
      runs.join("\n"),
    ).toBe(true);
    expect(runtime.instructions.some((i) => i.op === "COPY" && i.args.startsWith("--from="))).toBe(true);
    expect(
      runtime.instructions.some((i) => i.op === "RUN"),
      "the runtime stage installs nothing of its own",
    ).toBe(false);
    const user = runtime.instructions.filter((i) => i.op === "USER").at(-1)?.args ?? "root";
    expect(user).toMatch(/^[1-9][0-9]*(:[1-9][0-9]*)?$/);
    expect(stageEnv(runtime)["NODE_ENV"]).toBe("production");
    // The benchmarks measure what runs: the same allocator settings.
    expect(stageEnv(runtime)).toMatchObject(DEPLOYED_MALLOC_ENV);
    const cmd = stageCmd(runtime).join(" ");
    expect(cmd).toMatch(/\bnode\b.*services\/\$\{SERVICE\}\/dist\/main\.js/);
    expect(cmd).not.toMatch(/tsx|\.ts\b/);
  });

  it("builds from the context the .dockerignore leaves, with production dependencies only", () => {
    expect(build.code, build.out.slice(-4000)).toBe(0);
    expect(existsSync(join(context, "node_modules", ".package-lock.json")), "the build installed in the copy").toBe(true);
    expect(existsSync(join(context, ".git"))).toBe(false);
    expect(existsSync(join(context, ".data"))).toBe(false);
    expect(existsSync(join(context, "services", "ledger", "src", "main.ts"))).toBe(true);
    for (const devOnly of ["tsx", "typescript", "vitest", "esbuild", "turbo", "eslint"]) {
      expect(existsSync(join(out, "node_modules", devOnly)), devOnly).toBe(false);
      expect(existsSync(join(out, "node_modules", ".bin", devOnly)), `.bin/${devOnly}`).toBe(false);
    }
    for (const prod of ["postgres", "fastify", "pino", "zod", "@nats-io/transport-node"]) expect(existsSync(join(out, "node_modules", prod)), prod).toBe(true);
    for (const name of SERVICES) {
      expect(existsSync(join(out, "services", name, "dist", "main.js")), name).toBe(true);
      expect(existsSync(join(out, "services", name, "src")), `${name} sources`).toBe(false);
    }
    expect(readdirSync(join(out, "services", "ledger", "migrations")).filter((f) => f.endsWith(".sql")).length).toBeGreaterThan(0);
  });

  it("migrates an empty database with the compiled migrate command, and again with nothing left to do", { timeout: 60_000 }, async () => {
    const vars = containerEnv({ ...stageEnv(runtime), DATABASE_URL: imageAdminUrl });
    const first = await run("node", ["dist/migrate.js"], { cwd: out, env: vars, timeoutMs: 50_000 });
    expect(first.code, first.out).toBe(0);
    expect(first.out).toMatch(/ledger: applied 0001_/);
    const again = await run("node", ["dist/migrate.js"], { cwd: out, env: vars, timeoutMs: 50_000 });
    expect(again.code, again.out).toBe(0);
    expect(again.out).not.toMatch(/applied/);
    expect(again.out).toMatch(new RegExp(`${SERVICES.length} services up to date`));
  });

  it("starts every service with the image's command and each one answers /readyz", { timeout: 90_000 }, async () => {
    gatewayPort = await freePort();
    const extra: Partial<Record<ServiceName, Record<string, string>>> = {
      gateway: { HOST: "127.0.0.1", PORT: String(gatewayPort), ALT_PORT: String(await freePort()), REDIS_URL: env.redisUrl },
      kyc: { PII_KEYS: generateKeyRingEntry("k1") },
      // Its own page listener on a free port (its assets are read from services/console/assets at start).
      console: { CONSOLE_PORT: String(await freePort()) },
      receipts: { RECEIPTS_SEALING_KEYS: generateKeyRingEntry("r1") },
      webhooks: { WEBHOOK_SECRET_KEYS: generateKeyRingEntry("w1") },
      payments: { STRIPE_SECRET_KEY: "sk_live_image_stand_in", STRIPE_API_BASE: processor.url, STRIPE_WEBHOOK_SECRET: webhookSecret },
    };
    const started = await Promise.all(SERVICES.map((name) => startFromImage(name, extra[name] ?? {})));
    for (const r of started) {
      await waitFor(async () => (await readyz(r)) === 200, { timeoutMs: readyTimeoutMs, intervalMs: 200 }).catch((err: unknown) => {
        throw new Error(`${r.name} not ready: ${String(err)}\n${r.lines.slice(-20).join("\n")}`);
      });
    }
    for (const r of started)
      expect(
        r.lines.some((l) => l.includes('"msg":"ready"')),
        r.name,
      ).toBe(true);
  });

  it("answers the API through the gateway with a key the compiled operator CLI made", { timeout: 60_000 }, async () => {
    expect(gatewayPort).toBeGreaterThan(0);
    const org = await cli("org", "create", "--name", "Image Test");
    const key = await cli("key", "create", "--org", org["org_id"] ?? "", "--env", "test");
    const base = `http://127.0.0.1:${gatewayPort}`;
    const headers = { "x-api-key": key["api_key"] ?? "", "content-type": "application/json" };

    const health = await fetch(`${base}/v1/health-check`);
    const healthBody = (await health.json()) as { data: { status: string; services: Record<string, string> } };
    expect(health.status, JSON.stringify(healthBody)).toBe(200);
    expect(Object.keys(healthBody.data.services).sort()).toEqual([...SERVICES].sort());

    const created = await fetch(`${base}/v1/participants`, {
      method: "POST",
      headers,
      body: JSON.stringify({ participant_id: "creator_image_1", display_name: "Image" }),
    });
    const createdBody = (await created.json()) as { success: boolean; participant?: { id: string; wallet_id: string; created: boolean } };
    expect(created.status, JSON.stringify(createdBody)).toBe(201);
    expect(createdBody.participant).toMatchObject({ id: "creator_image_1", created: true });
    expect(createdBody.participant?.wallet_id).toMatch(/^[0-9a-f-]{36}$/);
    const read = await fetch(`${base}/v1/participants/creator_image_1`, { headers });
    const readBody = (await read.json()) as { participant?: { id: string; ledger_balance_cents: number } };
    expect(read.status, JSON.stringify(readBody)).toBe(200);
    expect(readBody.participant).toMatchObject({ id: "creator_image_1", ledger_balance_cents: 0 });

    // Bank statements are read by the ledger with the statement library compiled into its entry.
    const preview = await fetch(`${base}/v1/import-transactions`, {
      method: "POST",
      headers,
      body: JSON.stringify({
        action: "parse_preview",
        format: "csv",
        data: "date,amount\n2024-01-02,12.34\n",
        mapping: { date: "date", amount: "amount", currency: "USD" },
      }),
    });
    const previewBody = (await preview.json()) as { preview?: { line_count: number } };
    expect(preview.status, JSON.stringify(previewBody)).toBe(200);
    expect(previewBody.preview?.line_count).toBe(1);
  });

  it(
    "completes a live checkout from the card processor's signed event: the processor's package loads and verifies in the image",
    { timeout: 60_000 },
    async () => {
      expect(gatewayPort).toBeGreaterThan(0);
      const org = await cli("org", "create", "--name", "Image Live");
      const key = await cli("key", "create", "--org", org["org_id"] ?? "", "--env", "live", "--force-unverified");
      const base = `http://127.0.0.1:${gatewayPort}`;
      const headers = { "x-api-key": key["api_key"] ?? "", "content-type": "application/json" };
      const post = async (path: string, body: unknown) => {
        const res = await fetch(`${base}${path}`, { method: "POST", headers, body: JSON.stringify(body) });
        return { status: res.status, body: (await res.json()) as Record<string, unknown> };
      };
      expect((await post("/v1/participants", { participant_id: "creator_image_live", default_split_percent: 80 })).status).toBe(201);
      const created = await post("/v1/checkout-sessions", { participant_id: "creator_image_live", amount: 5_000 });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      const id = String((created.body["checkout_session"] as Record<string, unknown>)["id"]);

      const event = processorEvent("checkout.session.completed", checkoutSessionObject({ reference: id, amount: 5_000 }));
      const tampered = signed(event, webhookSecret);
      expect((await sendWebhook(base, { ...tampered, body: tampered.body.replace("5000", "5001") })).status).toBe(400);
      const delivered = await sendWebhook(base, signed(event, webhookSecret));
      expect(delivered.status, JSON.stringify(delivered.body)).toBe(200);

      const wallet = async () => {
        const res = await fetch(`${base}/v1/wallets?owner_id=creator_image_live&wallet_type=creator_earnings`, { headers });
        return ((await res.json()) as { wallets: { balance: number }[] }).wallets[0]?.balance;
      };
      await waitFor(async () => (await wallet()) === 4_000, { timeoutMs: 20_000, intervalMs: 200 });
    },
  );

  it("stops every service on SIGTERM with exit code 0", { timeout: 60_000 }, async () => {
    expect(running.length).toBe(SERVICES.length);
    for (const r of running) r.proc.kill("SIGTERM");
    const codes = await Promise.all(running.map(async (r) => ({ name: r.name, code: await r.exited })));
    expect(codes).toEqual(running.map((r) => ({ name: r.name, code: 0 })));
  });
});
