/**
 * The CLI's flags and where it connects: NATS_URL (the operator identity's credentials in the URL) and
 * NATS_PREFIX, else the dev stack's (`npm start` writes them under .data/ or DEV_DATA_DIR).
 */
import { existsSync, readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { userInfo } from "node:os";

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
  at: { type: "string" },
  cents: { type: "string" },
  operation: { type: "string" },
  mode: { type: "string" },
  email: { type: "string" },
  role: { type: "string" },
  "password-stdin": { type: "boolean" },
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
  at?: string | undefined;
  cents?: string | undefined;
  operation?: string | undefined;
  mode?: string | undefined;
  email?: string | undefined;
  role?: string | undefined;
  "password-stdin"?: boolean | undefined;
}

/**
 * A file of the dev stack: under DEV_DATA_DIR, else in `.data/` one folder up from the command's entry file
 * (scripts/admin.ts, or dist/admin.js in the image), where `npm start` keeps it.
 */
function devStackFile(name: string): string {
  if (process.env.DEV_DATA_DIR) return resolve(process.env.DEV_DATA_DIR, name);
  return resolve(dirname(process.argv[1] ?? "."), "..", ".data", name);
}

function devStackValue(key: "nats_url"): string | undefined {
  const file = devStackFile("dev-stack.json");
  if (!existsSync(file)) return undefined;
  const stack = JSON.parse(readFileSync(file, "utf8")) as Record<string, string | undefined>;
  return stack[key] || undefined;
}

export function natsUrl(): string {
  const url = process.env.NATS_URL || devStackValue("nats_url");
  if (url) return url;
  throw new Error("set NATS_URL (the operator identity's NATS URL) or start the dev stack with `npm start` first");
}

/** Who acts when --actor is not given: the operator's login name on the machine the command runs on. */
export function defaultActor(): string {
  try {
    return `operator:${userInfo().username}`;
  } catch {
    return "operator:unknown";
  }
}
