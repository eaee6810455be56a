/**
 * Operator CLI (not the public API): `npm run -s admin -- <group> <command> [flags]`. Output is JSON on stdout;
 * errors go to stderr as JSON with a non-zero exit. `npm run -s admin -- help` lists every command.
 *
 * One channel: every command is a NATS request to the service that owns it (ADMIN_COMMANDS of
 * @treasury/contracts), which checks the flags, does the work and records it in its audit log (who, when, what,
 * which ids, why, outcome); `audit list` and `find <id>` ask every service and merge their answers (ADR 0016).
 * `--actor NAME` names the operator (default: the login name) and `--reason TEXT` says why.
 *
 * Connects with NATS_URL (the operator identity's credentials in the URL) and NATS_PREFIX, else the dev stack's
 * (.data/dev-stack.json, or under DEV_DATA_DIR as `npm start` uses it).
 */
import { readFileSync, statSync } from "node:fs";
import { parseArgs } from "node:util";
import { ADMIN_COMMANDS, ADMIN_FILE_MAX_BYTES, adminOperation, DomainError, type AdminCommandSpec, type AdminRequest } from "@treasury/contracts";
import { auditListCommand } from "./admin/audit.ts";
import { AdminClient, COMMAND_TIMEOUT_MS, find } from "@treasury/service-kit/operator-client";
import { defaultActor, natsUrl, OPTIONS, type Values } from "./admin/context.ts";

const COMMANDS: Record<string, AdminCommandSpec> = ADMIN_COMMANDS;

/** Commands the CLI answers by asking every service. */
const FANOUT_USAGE = {
  "audit list": "audit list [--org ID] [--action GROUP|GROUP.COMMAND] [--since 2026-03-01|24h] [--target ID] [--limit N]   → {entries, count}, newest first",
  find: "find ID [--org ID]   → {query, kinds, found, org_ids, request_ids, trace_ids, rows: {<schema.table>: […]}, events, audit, truncated}; exits 1 when nothing holds the id",
};

function usage(): { commands: string[] } {
  return { commands: [...Object.values(COMMANDS).map((c) => c.usage), ...Object.values(FANOUT_USAGE)] };
}

/** `find` takes its id as the word after it; every other command is two words. */
function commandName(argv: string[]): { name: string; rest: string[] } {
  if (argv[0] === "find") return { name: "find", rest: argv.slice(1) };
  return { name: argv.slice(0, 2).join(" "), rest: argv.slice(2) };
}

/** The file a command's positional argument names, read here: the service that takes it may run elsewhere. */
function fileOf(spec: AdminCommandSpec, positionals: string[]): AdminRequest["file"] {
  const path = positionals[0];
  if (spec.file !== true || path === undefined) return undefined;
  if (statSync(path).size > ADMIN_FILE_MAX_BYTES) throw new Error(`${path} is larger than ${ADMIN_FILE_MAX_BYTES} bytes`);
  return { name: path, content: readFileSync(path, "latin1") };
}

/** The flags as typed, without the two every command shares (they travel as actor and reason). */
function flagsOf(values: Values): AdminRequest["flags"] {
  const { actor: _a, reason: _r, "password-stdin": _p, ...flags } = values;
  return Object.fromEntries(Object.entries(flags).filter(([, v]) => v !== undefined)) as AdminRequest["flags"];
}

/** A password is read from stdin (its first line), never taken from argv, where `ps` and shell history would show it. */
async function passwordFromStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  const password = Buffer.concat(chunks).toString("utf8").split(/\r?\n/)[0] ?? "";
  if (password === "") throw new Error("--password-stdin: no password on stdin");
  return password;
}

/** Who acts and why, checked here so the operator reads which flag is wrong (the services check them again). */
function actorAndReason(values: Values): { actor: string; reason?: string } {
  const actor = (values.actor ?? defaultActor()).trim();
  if (actor === "" || actor.length > 255) throw new Error("--actor must be 1–255 characters");
  const reason = values.reason?.trim();
  if (reason !== undefined && reason.length > 1_000) throw new Error("--reason must be at most 1000 characters");
  return reason === undefined || reason === "" ? { actor } : { actor, reason };
}

async function run(client: AdminClient, name: string, values: Values, positionals: string[]): Promise<{ body: unknown; failed: boolean }> {
  if (name === "audit list") return { body: await auditListCommand(client, values), failed: false };
  if (name === "find") {
    const result = await find(client, positionals[0] ?? "", { orgId: values.org });
    return { body: result, failed: !result.found };
  }
  const spec = COMMANDS[name] as AdminCommandSpec;
  const flags = flagsOf(values);
  if (values["password-stdin"] === true) flags["password"] = await passwordFromStdin();
  const request: AdminRequest = { ...actorAndReason(values), flags, positionals };
  const file = fileOf(spec, positionals);
  const body = await client.call(spec.service, adminOperation(name), file === undefined ? request : { ...request, file });
  return { body, failed: spec.failed?.(body) ?? false };
}

async function main(argv: string[]): Promise<void> {
  const { name, rest } = commandName(argv);
  if (name === "help" || name === "") {
    process.stdout.write(`${JSON.stringify(usage())}\n`);
    return;
  }
  const known = name in COMMANDS || name in FANOUT_USAGE;
  if (!known) throw new Error(`unknown command "${name}"; commands: ${[...Object.keys(COMMANDS), ...Object.keys(FANOUT_USAGE)].join(", ")}`);
  const { values, positionals } = parseArgs({ args: rest, options: OPTIONS, strict: true, allowPositionals: true });
  const allowed = name === "find" ? 1 : (COMMANDS[name]?.positionals ?? 0);
  if (positionals.length > allowed) throw new Error(`unexpected argument "${positionals.at(-1) ?? ""}"`);
  const client = await AdminClient.connect(natsUrl(), process.env.NATS_PREFIX ?? "");
  try {
    const { body, failed } = await run(client, name, values, positionals);
    process.stdout.write(`${JSON.stringify(body)}\n`);
    if (failed) process.exitCode = 1;
  } finally {
    await client.close();
  }
}

function errorJson(err: unknown): Record<string, unknown> {
  if (err instanceof DomainError && err.code === "service_timeout") {
    const s = COMMAND_TIMEOUT_MS / 1000;
    const message = `no answer within ${s} s: the outcome is unknown (the service records it in its audit log: audit list --action …)`;
    return { error: message, error_code: err.code };
  }
  const code = err instanceof DomainError ? { error_code: err.code } : {};
  return { error: err instanceof Error ? err.message : String(err), ...code };
}

try {
  await main(process.argv.slice(2));
} catch (err) {
  process.stderr.write(`${JSON.stringify(errorJson(err))}\n`);
  process.exit(1);
}
