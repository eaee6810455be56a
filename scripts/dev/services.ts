// The services of the dev stack: each one's environment, each started as its own child process with its output
// prefixed by its name, restarted with a backoff when it dies, waited for until ready; and services an earlier
// run left behind, stopped.
import { spawn } from "node:child_process";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { SERVICES, type ServiceName } from "@treasury/contracts";
import { serviceDatabaseUrl } from "@treasury/service-kit";
import {
  altPort,
  COLORS,
  consolePort,
  dbPoolMax,
  env,
  eventsReplicas,
  HEALTH_PORTS,
  host,
  KEY_RINGS,
  mainPort,
  paint,
  pidsFile,
  readyPollIntervalMs,
  readyTimeoutMs,
  restartBackoffMaxMs,
  restartResetAfterMs,
  root,
  say,
  shout,
  stopTimeoutMs,
} from "./config.ts";
import { ensureKeyRing, ensureStripeWebhookSecret } from "./secrets.ts";
import { stack, type Child } from "./state.ts";

export interface ServiceSecrets {
  adminUrl: string;
  natsUrl: string;
  rolePassword: string | undefined;
  /** Undefined when NATS is the caller's (NATS_URL): then its own configuration decides. */
  natsPassword: string | undefined;
}

export function serviceEnv(name: ServiceName, s: ServiceSecrets): NodeJS.ProcessEnv {
  const vars: NodeJS.ProcessEnv = {
    ...env,
    DATABASE_URL: serviceDatabaseUrl(s.adminUrl, name, s.rolePassword),
    NATS_URL: s.natsUrl,
    ...(s.natsPassword !== undefined ? { NATS_USER: name, NATS_PASSWORD: s.natsPassword } : {}),
    NATS_PREFIX: env["NATS_PREFIX"] ?? "",
    EVENTS_REPLICAS: String(eventsReplicas),
    HEALTH_HOST: "127.0.0.1",
    HEALTH_PORT: String(HEALTH_PORTS[name]),
    LOG_LEVEL: env["LOG_LEVEL"] ?? "info",
    DB_POOL_MAX: String(dbPoolMax),
  };
  for (const ring of KEY_RINGS) {
    if (ring.service === name && (env[ring.variable] ?? "") === "") vars[ring.variable] = ensureKeyRing(ring.file, ring.what);
  }
  if (name === "payments" && (env["STRIPE_WEBHOOK_SECRET"] ?? "") === "") vars["STRIPE_WEBHOOK_SECRET"] = ensureStripeWebhookSecret();
  // On a developer's machine the receiver of sandbox webhooks usually runs on the same machine.
  if (name === "webhooks") vars["WEBHOOK_ALLOW_PRIVATE_URLS"] = env["WEBHOOK_ALLOW_PRIVATE_URLS"] ?? "true";
  // So do a developer's alert receivers (and a local SMTP server, named by RISK_SMTP_URL).
  if (name === "risk") vars["RISK_ALERT_ALLOW_PRIVATE_URLS"] = env["RISK_ALERT_ALLOW_PRIVATE_URLS"] ?? "true";
  if (name === "gateway") {
    vars["PORT"] = mainPort;
    vars["ALT_PORT"] = altPort;
    vars["HOST"] = host;
    vars["ALT_BASE_URL"] = env["ALT_BASE_URL"] ?? `http://${host}:${altPort}`;
    vars["CONSOLE_URL"] = `http://127.0.0.1:${consolePort}`;
  }
  // Plain http on a developer's machine: the console's cookies cannot be __Host-/Secure there.
  if (name === "console") {
    vars["CONSOLE_HOST"] = "127.0.0.1";
    vars["CONSOLE_PORT"] = consolePort;
    vars["CONSOLE_SECURE_COOKIES"] = "false";
  }
  return vars;
}
export function startService(name: ServiceName, index: number, vars: NodeJS.ProcessEnv): void {
  const label = paint(COLORS[index % COLORS.length] ?? 36, `[${name}]`.padEnd(Math.max(...SERVICES.map((s) => s.length)) + 2));
  const proc = spawn(process.execPath, ["--import", "tsx", join(root, "services", name, "src", "main.ts")], {
    cwd: root,
    env: vars,
    stdio: ["ignore", "pipe", "pipe"],
    // Own process group: Ctrl-C reaches only this script, which stops the services in order.
    detached: true,
  });
  const child: Child = { name, proc, hasExited: false, exited: Promise.resolve() };
  const startedAt = Date.now();
  child.exited = new Promise((resolveExit) => {
    proc.once("exit", (code, signal) => {
      child.hasExited = true;
      resolveExit();
      if (!stack.shuttingDown) restartLater(name, index, vars, `${signal ?? `exit code ${code}`}`, Date.now() - startedAt);
    });
  });
  proc.once("error", (err) => {
    // A spawn that failed never runs: the same restart schedule applies (the exit event does not come).
    if (!child.hasExited && !stack.shuttingDown) {
      child.hasExited = true;
      restartLater(name, index, vars, err.message, Date.now() - startedAt);
    }
  });
  createInterface({ input: proc.stdout! }).on("line", (line) => process.stdout.write(`${label} ${line}\n`));
  createInterface({ input: proc.stderr! }).on("line", (line) => process.stderr.write(`${label} ${line}\n`));
  const at = stack.children.findIndex((c) => c.name === name);
  if (at >= 0) stack.children[at] = child;
  else stack.children.push(child);
  if (existsSync(pidsFile)) writePids();
}

/** Consecutive quick crashes per service: each doubles the wait before the next start, up to restartBackoffMaxMs. */
const crashes = new Map<ServiceName, number>();

/**
 * The stack supervises its services: one that dies is started again after a backoff (1 s, 2 s, 4 s … 30 s; a run
 * longer than a minute starts the count over), with a log line, and the others keep serving. Only Ctrl-C (or
 * SIGTERM) stops the stack.
 */
function restartLater(name: ServiceName, index: number, vars: NodeJS.ProcessEnv, why: string, ranMs: number): void {
  const n = ranMs > restartResetAfterMs ? 1 : (crashes.get(name) ?? 0) + 1;
  crashes.set(name, n);
  const waitMs = Math.min(restartBackoffMaxMs, 1_000 * 2 ** (n - 1));
  shout(`${name} exited unexpectedly (${why}); restarting it in ${waitMs / 1000} s`);
  setTimeout(() => {
    if (stack.shuttingDown) return;
    say(`restarting ${name} (attempt ${n})`);
    startService(name, index, vars);
  }, waitMs);
}

export function writePids(): void {
  writeFileSync(pidsFile, JSON.stringify(stack.children.map((c) => ({ name: c.name, pid: c.proc.pid }))));
}

export async function waitUntilReady(): Promise<void> {
  const deadline = Date.now() + readyTimeoutMs;
  const pending = new Set<ServiceName>(SERVICES);
  say(`waiting for ${pending.size} services to answer /readyz`);
  while (pending.size > 0 && !stack.shuttingDown) {
    for (const name of [...pending]) {
      try {
        const res = await fetch(`http://127.0.0.1:${HEALTH_PORTS[name]}/readyz`, { signal: AbortSignal.timeout(1_000) });
        await res.body?.cancel();
        if (res.status === 200) {
          pending.delete(name);
          say(`${name} ready`);
        }
      } catch {
        // not listening yet
      }
    }
    if (pending.size === 0) return;
    if (Date.now() > deadline) {
      throw new Error(`not ready within ${readyTimeoutMs} ms: ${[...pending].join(", ")} (GET /readyz did not answer 200)`);
    }
    await new Promise((r) => setTimeout(r, readyPollIntervalMs));
  }
}

/**
 * Services that an earlier run started and could not stop (it was killed with -9) still hold their ports.
 * Their pids are in .data/dev-services.json; a pid is trusted only when /proc says it still runs that service.
 */
export async function stopLeftoverServices(): Promise<void> {
  if (!existsSync(pidsFile)) return;
  let saved: { name: string; pid: number }[] = [];
  try {
    saved = JSON.parse(readFileSync(pidsFile, "utf8")) as { name: string; pid: number }[];
  } catch {
    saved = [];
  }
  const leftovers = saved.filter(({ name, pid }) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(join("services", name, "src", "main.ts"));
    } catch {
      return false;
    }
  });
  if (leftovers.length > 0) {
    say(`stopping ${leftovers.length} services left running by an earlier start: ${leftovers.map((l) => `${l.name} (${l.pid})`).join(", ")}`);
    for (const { pid } of leftovers) process.kill(pid, "SIGTERM");
    const deadline = Date.now() + stopTimeoutMs;
    while (Date.now() < deadline && leftovers.some(({ pid }) => existsSync(`/proc/${pid}`))) await new Promise((r) => setTimeout(r, 100));
    for (const { pid } of leftovers) if (existsSync(`/proc/${pid}`)) process.kill(pid, "SIGKILL");
  }
  rmSync(pidsFile, { force: true });
}
