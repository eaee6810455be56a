/**
 * What every admin command is given: the parsed flags, the database, the operator, and the few readers of
 * configuration the commands share (the dev stack's files stand in for variables that are not set).
 */
import { existsSync, readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { userInfo } from "node:os";
import type postgres from "postgres";
import { parseKeyRing, Sealer } from "@treasury/service-kit";

export const OPTIONS = {
  name: { type: "string" },
  org: { type: "string" },
  env: { type: "string" },
  scopes: { type: "string" },
  "key-id": { type: "string" },
  "force-unverified": { type: "boolean" },
  "retry-after": { type: "string" },
  message: { type: "string" },
  status: { type: "string" },
  subject: { type: "string" },
  limit: { type: "string" },
  id: { type: "string" },
  reason: { type: "string" },
  actor: { type: "string" },
  date: { type: "string" },
  shortfall: { type: "string" },
  action: { type: "string" },
  since: { type: "string" },
  target: { type: "string" },
  delivery: { type: "string" },
} as const;

export interface Values {
  name?: string | undefined;
  org?: string | undefined;
  env?: string | undefined;
  scopes?: string | undefined;
  "key-id"?: string | undefined;
  "force-unverified"?: boolean | undefined;
  "retry-after"?: string | undefined;
  message?: string | undefined;
  status?: string | undefined;
  subject?: string | undefined;
  limit?: string | undefined;
  id?: string | undefined;
  reason?: string | undefined;
  actor?: string | undefined;
  date?: string | undefined;
  shortfall?: string | undefined;
  action?: string | undefined;
  since?: string | undefined;
  target?: string | undefined;
  delivery?: string | undefined;
}

/** A connection or, for a command that runs in one transaction with its audit row, that transaction. */
export type Q = postgres.Sql | postgres.TransactionSql;

export interface Ctx {
  /** The admin connection (commands whose use case opens its own transaction use this one). */
  sql: postgres.Sql;
  /** Where a database change goes: the transaction that also writes its audit row, when there is one. */
  q: Q;
  values: Values;
  positionals: string[];
  /** Who acts: `--actor`, else the operator's login name. */
  actor: string;
  reason: string | undefined;
  /** What the command learned while running that its audit row keeps (the request id of a call it made). */
  facts: Record<string, unknown>;
}

export function need(v: string | undefined, flag: string): string {
  if (!v) throw new Error(`missing ${flag}`);
  return v;
}

/** `--env test|live` as the platform's environment. */
export function environmentOf(values: Values): { env: "test" | "live"; livemode: boolean } {
  const env = need(values.env, "--env");
  if (env !== "test" && env !== "live") throw new Error("--env must be test or live");
  return { env, livemode: env === "live" };
}

/**
 * A file of the dev stack: under DEV_DATA_DIR, else in `.data/` one folder up from the command's entry file
 * (scripts/admin.ts, or dist/admin.js in the image), where `npm start` keeps it.
 */
function devStackFile(name: string): string {
  if (process.env.DEV_DATA_DIR) return resolve(process.env.DEV_DATA_DIR, name);
  return resolve(dirname(process.argv[1] ?? "."), "..", ".data", name);
}

function devStackValue(key: "database_url" | "nats_url"): string | undefined {
  const file = devStackFile("dev-stack.json");
  if (!existsSync(file)) return undefined;
  const stack = JSON.parse(readFileSync(file, "utf8")) as Record<string, string | undefined>;
  return stack[key] || undefined;
}

export function databaseUrl(): string {
  const url = process.env.DATABASE_URL || devStackValue("database_url");
  if (url) return url;
  throw new Error("set DATABASE_URL (admin connection URL) or start the dev stack with `npm start` first");
}

export function natsUrl(): string {
  const url = process.env.NATS_URL || devStackValue("nats_url");
  if (url) return url;
  throw new Error("set NATS_URL (the payouts service's NATS) or start the dev stack with `npm start` first");
}

/** The key ring that opens personal data: PII_KEYS (and PII_ACTIVE_KEY_ID), else the one `npm start` generated. */
export function piiSealer(): Sealer {
  let spec = process.env.PII_KEYS;
  if (!spec) {
    const file = devStackFile("pii-keys");
    if (existsSync(file)) spec = readFileSync(file, "utf8").trim();
  }
  if (!spec) throw new Error("set PII_KEYS (the kyc service's key ring) to open personal data");
  return new Sealer(parseKeyRing(spec, process.env.PII_ACTIVE_KEY_ID || undefined));
}

/** Who acts when --actor is not given: the operator's login name on the machine the command runs on. */
export function defaultActor(): string {
  try {
    return `operator:${userInfo().username}`;
  } catch {
    return "operator:unknown";
  }
}
