// `npm run migrate`: creates every service's role and schema and applies services/<name>/migrations/*.sql.
// DATABASE_URL is an admin (superuser) URL; the dev stack (`npm start`) runs this itself. DB_PASSWORD_<SERVICE>
// (e.g. DB_PASSWORD_LEDGER), where set, becomes that service's role password (the local compose stack sets them;
// in Kubernetes CloudNativePG manages the roles' passwords instead).
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { SERVICES } from "@treasury/contracts";
import { migrateAll } from "@treasury/service-kit";

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
} catch (err) {
  console.error(`migrate: failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  process.exit(1);
}
