// The dev stack's settings: where its data lives, its ports and timings (each from the environment, with a default),
// and how it writes to the terminal.
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { SERVICES, type ServiceName } from "@treasury/contracts";

export const root = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const env = process.env;
export const dataRoot = env["DEV_DATA_DIR"] ? resolve(env["DEV_DATA_DIR"]) : join(root, ".data");
export const credentialsFile = join(dataRoot, "dev-credentials.json");
export const pidsFile = join(dataRoot, "dev-services.json");
/** Generated secrets, one JSON object per kind: each NATS identity's password, each service role's password. */
export const natsPasswordsFile = join(dataRoot, "nats-passwords.json");
export const rolePasswordsFile = join(dataRoot, "db-role-passwords.json");
/** The private PostgreSQL's superuser password: every connection to it authenticates with scram-sha-256. */
export const superuserPasswordFile = join(dataRoot, "db-superuser-password.json");
/**
 * Key rings that seal secrets at rest, generated on first start into the data folder (readable by its owner
 * only) and reused afterwards; a value set in the environment wins. Each service gets the rings it uses.
 */
export const KEY_RINGS: { service: ServiceName; variable: string; file: string; what: string }[] = [
  { service: "kyc", variable: "PII_KEYS", file: "pii-keys", what: "personal data" },
  { service: "payouts", variable: "PII_KEYS", file: "payouts-pii-keys", what: "bank account numbers" },
  { service: "tax", variable: "PII_KEYS", file: "tax-pii-keys", what: "taxpayer identification numbers" },
  { service: "receipts", variable: "RECEIPTS_SEALING_KEYS", file: "receipts-sealing-keys", what: "receipt signing keys" },
  { service: "webhooks", variable: "WEBHOOK_SECRET_KEYS", file: "webhook-secret-keys", what: "webhook signing secrets" },
];

export const pgPort = Number(env["DEV_PG_PORT"] ?? 54329);
export const natsPort = Number(env["DEV_NATS_PORT"] ?? 42229);
/**
 * DEV_NATS_CLUSTER=3: the private NATS is a three-node JetStream cluster (client ports DEV_NATS_PORT and the next
 * two, route ports 10 above, monitoring ports 20 above) and the EVENTS stream has three replicas, as deployed. A NATS
 * named by NATS_URL is the caller's: this does not apply to it.
 */
export const natsNodes = (env["NATS_URL"] ?? "") === "" ? Number(env["DEV_NATS_CLUSTER"] ?? 1) : 1;
/** What the migrate step and the services take as EVENTS_REPLICAS: one per private node, unless set. */
export const eventsReplicas = Number(env["EVENTS_REPLICAS"] ?? natsNodes);
export const mainPort = env["PORT"] ?? "8080";
export const altPort = env["ALT_PORT"] ?? "8081";
/** The operator console's own listener; browsers reach it through the gateway's alt port at /console. */
export const consolePort = env["CONSOLE_PORT"] ?? "8090";
export const host = env["HOST"] ?? "127.0.0.1";
export const dbPoolMax = Number(env["DB_POOL_MAX"] ?? 10);
/**
 * Every service process's pool and its outbox relay's own connection, plus headroom for migrations, this script,
 * psql sessions and LISTEN connections.
 */
export const maxConnections = SERVICES.length * (dbPoolMax + 1) + 40;
export const readyTimeoutMs = Number(env["DEV_READY_TIMEOUT_MS"] ?? 120_000);
export const stopTimeoutMs = Number(env["DEV_STOP_TIMEOUT_MS"] ?? 10_000);
export const readyPollIntervalMs = 250;
/** Restart backoff of a crashed service (see restartLater). */
export const restartBackoffMaxMs = 30_000;
export const restartResetAfterMs = 60_000;

/** Each service's /healthz, /readyz and /metrics port: DEV_HEALTH_PORT_BASE (9100) plus its offset. */
export const healthPortBase = Number(env["DEV_HEALTH_PORT_BASE"] ?? 9100);
export const HEALTH_PORT_OFFSETS: Record<ServiceName, number> = {
  gateway: 0,
  ledger: 1,
  payments: 2,
  payouts: 3,
  refunds: 4,
  receipts: 5,
  kyc: 6,
  webhooks: 7,
  risk: 8,
  invoicing: 9,
  tax: 10,
  console: 11,
};
export const HEALTH_PORTS = Object.fromEntries(SERVICES.map((s) => [s, healthPortBase + HEALTH_PORT_OFFSETS[s]])) as Record<ServiceName, number>;

export const tty = process.stdout.isTTY === true;
export const COLORS = [36, 33, 32, 35, 34, 96, 93, 92, 95];
export const paint = (code: number, text: string): string => (tty ? `\u001b[${code}m${text}\u001b[0m` : text);
export const bold = (text: string): string => (tty ? `\u001b[1m${text}\u001b[22m` : text);
export const say = (msg: string): void => console.log(`${paint(90, "[dev]")} ${msg}`);
export const shout = (msg: string): void => console.error(`\n${paint(41, paint(97, ` ${msg} `))}\n`);
