// `npm run migrate`: creates every service's role and schema and applies services/<name>/migrations/*.sql, then
// creates or updates the EVENTS stream. DATABASE_URL is an admin (superuser) URL; the dev stack (`npm start`) runs
// this itself. DB_PASSWORD_<SERVICE> (e.g. DB_PASSWORD_LEDGER), where set, becomes that service's role password (the
// local compose stack sets them; in Kubernetes CloudNativePG manages the roles' passwords instead).
// NATS_URL with NATS_USER=migrations and NATS_PASSWORD (the only identity allowed to create or update the stream,
// ADR 0011), NATS_PREFIX, EVENTS_REPLICAS and NATS_TLS_CA as the services read them; without NATS_URL the stream is
// left as it is.
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { SERVICES } from "@treasury/contracts";
import { migrateAll, migrateEventsStream } from "@treasury/service-kit";

const adminUrl = process.env["DATABASE_URL"];
if (adminUrl === undefined || adminUrl === "") {
  console.error(
    "migrate: set DATABASE_URL to an admin (superuser) URL, e.g. DATABASE_URL=postgres://postgres@127.0.0.1:54329/postgres " +
      "(the private PostgreSQL of `npm start`).",
  );
  process.exit(2);
}

const rolePasswords = Object.fromEntries(
  SERVICES.flatMap((s) => {
    const password = process.env[`DB_PASSWORD_${s.toUpperCase()}`];
    return password === undefined || password === "" ? [] : [[s, password]];
  }),
);

const rootDir = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const started = Date.now();
try {
  await migrateAll({ adminUrl, rootDir, services: [...SERVICES], rolePasswords, log: (m) => console.log(`migrate: ${m}`) });
  console.log(`migrate: ${SERVICES.length} services up to date (${Date.now() - started} ms)`);
  await migrateNats();
} catch (err) {
  console.error(`migrate: failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  process.exit(1);
}

/** The EVENTS stream of the deployment's prefix, created or brought to the current limits and replica count. */
async function migrateNats(): Promise<void> {
  const url = process.env["NATS_URL"];
  if (url === undefined || url === "") {
    console.log("migrate: NATS_URL not set; the EVENTS stream is left as it is");
    return;
  }
  const prefix = process.env["NATS_PREFIX"] ?? "";
  const replicas = Number(process.env["EVENTS_REPLICAS"] ?? 1);
  if (!Number.isInteger(replicas) || replicas < 1 || replicas > 5) throw new Error(`EVENTS_REPLICAS must be 1–5, not ${process.env["EVENTS_REPLICAS"]}`);
  const caFile = process.env["NATS_TLS_CA"];
  const tls = caFile !== undefined && caFile !== "" ? { tls: { caFile } } : {};
  await migrateEventsStream({ url, name: "migrate", user: process.env["NATS_USER"], password: process.env["NATS_PASSWORD"], ...tls }, prefix, replicas);
  console.log(`migrate: EVENTS stream of prefix "${prefix}" up to date (${replicas} replicas)`);
}
