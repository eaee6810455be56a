/**
 * Operator CLI (not the public API): `npm run -s admin -- <group> <command> [flags]`. Output is JSON on stdout;
 * errors go to stderr as JSON with a non-zero exit. `npm run -s admin -- help` lists every command.
 *
 * Commands that change something are recorded in the audit log (gateway.audit_log: who, when, what, which ids,
 * why, outcome), with the change itself when it is a database write; `audit list` reads it. `find <id>` prints
 * everything the system holds about any id it hands out. `--actor NAME` names the operator (default: the login
 * name) and `--reason TEXT` says why.
 *
 * Connects with DATABASE_URL (an admin URL), else the dev stack's database (.data/dev-stack.json, or under
 * DEV_DATA_DIR as `npm start` uses it); payouts commands also use NATS_URL and NATS_PREFIX, else the dev stack's.
 */
import { parseArgs } from "node:util";
import postgres from "postgres";
import { DomainError } from "@treasury/contracts";
import { auditCommands, checkActor, checkReason, CommandFailed, runCommand } from "./admin/audit.ts";
import type { Commands } from "./admin/command.ts";
import { databaseUrl, defaultActor, OPTIONS } from "./admin/context.ts";
import { findCommands } from "./admin/find.ts";
import { gatewayCommands } from "./admin/gateway.ts";
import { kycCommands } from "./admin/kyc.ts";
import { ledgerCommands } from "./admin/ledger.ts";
import { payoutsCommands } from "./admin/payouts.ts";
import { receiptsCommands } from "./admin/receipts.ts";
import { refundsCommands } from "./admin/refunds.ts";
import { webhooksCommands } from "./admin/webhooks.ts";

const COMMANDS: Commands = {
  ...gatewayCommands,
  ...ledgerCommands,
  ...kycCommands,
  ...refundsCommands,
  ...receiptsCommands,
  ...payoutsCommands,
  ...webhooksCommands,
  ...auditCommands,
  ...findCommands,
};

function usage(): { commands: string[] } {
  return { commands: Object.values(COMMANDS).map((c) => c.usage) };
}

/** `find` takes its id as the word after it; every other command is two words. */
function commandName(argv: string[]): { name: string; rest: string[] } {
  if (argv[0] === "find") return { name: "find", rest: argv.slice(1) };
  return { name: argv.slice(0, 2).join(" "), rest: argv.slice(2) };
}

function errorJson(err: unknown): Record<string, unknown> {
  const code = err instanceof DomainError ? { error_code: err.code } : {};
  return { error: err instanceof Error ? err.message : String(err), ...code };
}

async function main(argv: string[]): Promise<void> {
  const { name, rest } = commandName(argv);
  if (name === "help" || name === "") {
    process.stdout.write(`${JSON.stringify(usage())}\n`);
    return;
  }
  const cmd = COMMANDS[name];
  if (cmd === undefined) throw new Error(`unknown command "${name}"; commands: ${Object.keys(COMMANDS).join(", ")}`);
  const { values, positionals } = parseArgs({ args: rest, options: OPTIONS, strict: true, allowPositionals: true });
  if (positionals.length > (cmd.positionals ?? 0)) throw new Error(`unexpected argument "${positionals.at(-1) ?? ""}"`);
  const actor = checkActor(values.actor ?? defaultActor());
  const reason = checkReason(values.reason);
  const sql = postgres(databaseUrl(), { max: 1, onnotice: () => {}, connection: { application_name: "admin-cli" } });
  try {
    const ran = await runCommand(cmd, { sql, q: sql, values, positionals, actor, reason, facts: {} });
    process.stdout.write(`${JSON.stringify(ran.result)}\n`);
    if (ran.auditError !== undefined) {
      process.stderr.write(
        `${JSON.stringify({ error: "the action completed but its audit row could not be written", audit_error: errorJson(ran.auditError).error })}\n`,
      );
      process.exitCode = 1;
    }
  } finally {
    await sql.end({ timeout: 5 });
  }
}

try {
  await main(process.argv.slice(2));
} catch (err) {
  const failure = err instanceof CommandFailed ? err.error : err;
  const audit = err instanceof CommandFailed && err.auditError !== undefined ? { audit_error: errorJson(err.auditError).error } : {};
  process.stderr.write(`${JSON.stringify({ ...errorJson(failure), ...audit })}\n`);
  process.exit(1);
}
