// What the dev stack generates on first start and reuses afterwards, in its data folder (readable by its owner only):
// the sandbox org and its test key, passwords, key rings and the processor's webhook secret.
import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import postgres from "postgres";
import { generateKeyRingEntry } from "@treasury/service-kit";
import { bold, credentialsFile, dataRoot, say } from "./config.ts";

export interface Credentials {
  org_id: string;
  test_api_key: string;
}

/** Reuses .data/dev-credentials.json while its org exists in this database; otherwise creates an org and key. */
export async function ensureCredentials(adminUrl: string): Promise<Credentials> {
  const sql = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    if (existsSync(credentialsFile)) {
      const saved = JSON.parse(readFileSync(credentialsFile, "utf8")) as Partial<Credentials>;
      if (typeof saved.org_id === "string" && typeof saved.test_api_key === "string") {
        const rows = await sql`select 1 from gateway.orgs where id = ${saved.org_id}`.catch(() => []);
        if (rows.length > 0) {
          say(`reusing org ${saved.org_id} and its test key from ${credentialsFile}`);
          return { org_id: saved.org_id, test_api_key: saved.test_api_key };
        }
        say(`${credentialsFile} names an org this database does not have; creating a new one`);
      }
    }
    // The gateway owns orgs and keys; its admin functions are the one way to create them.
    const admin = await import("../../services/gateway/src/admin.ts");
    const { org_id } = await admin.createOrg(sql, { name: "Dev Sandbox" });
    const { api_key } = await admin.createApiKey(sql, { orgId: org_id, environment: "sandbox", scopes: null });
    const credentials: Credentials = { org_id, test_api_key: api_key };
    writeFileSync(credentialsFile, `${JSON.stringify(credentials, null, 2)}\n`, { mode: 0o600 });
    say(bold(`created sandbox org ${org_id} and test key ${api_key} (saved to ${credentialsFile})`));
    return credentials;
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/**
 * Reuses the generated secrets of a data folder file, adding one for each name it lacks; the file is readable by its
 * owner only. Letters and digits: they go into URLs and configuration files unescaped.
 */
export function ensureSecrets(file: string, names: readonly string[], what: string): Record<string, string> {
  const saved = existsSync(file) ? (JSON.parse(readFileSync(file, "utf8")) as Record<string, string>) : {};
  const missing = names.filter((n) => typeof saved[n] !== "string" || saved[n] === "");
  if (missing.length > 0) {
    for (const n of missing) saved[n] = randomBytes(24).toString("hex");
    writeFileSync(file, `${JSON.stringify(saved, null, 2)}\n`, { mode: 0o600 });
    say(`generated ${what} for ${missing.join(", ")} (${file})`);
  }
  chmodSync(file, 0o600);
  return saved;
}

export function withCredentials(url: string, user: string, password: string): string {
  // Of a cluster's URL list, the first carries them: the kit's parseNatsUrl reads them from there.
  const [first = "", ...others] = url.split(",");
  const u = new URL(first);
  u.username = encodeURIComponent(user);
  u.password = encodeURIComponent(password);
  return [u.toString().replace(/\/$/, ""), ...others].join(",");
}

/**
 * The card processor's webhook endpoint secret of the dev stack, kept in dev-credentials.json as
 * `stripe_webhook_secret` (created on first start): a developer signs test events with it (README, "Live card
 * payments") to drive live completion without a processor account.
 */
export function ensureStripeWebhookSecret(): string {
  const saved = JSON.parse(readFileSync(credentialsFile, "utf8")) as Record<string, unknown>;
  if (typeof saved["stripe_webhook_secret"] === "string") return saved["stripe_webhook_secret"];
  const secret = `whsec_${randomBytes(24).toString("base64")}`;
  writeFileSync(credentialsFile, `${JSON.stringify({ ...saved, stripe_webhook_secret: secret }, null, 2)}\n`, { mode: 0o600 });
  say(`generated the processor webhook secret (stripe_webhook_secret in ${credentialsFile})`);
  return secret;
}

/** Reuses a key ring of the data folder, or creates one (readable by its owner only) on first start. */
export function ensureKeyRing(name: string, what: string): string {
  const file = join(dataRoot, name);
  if (existsSync(file)) return readFileSync(file, "utf8").trim();
  const ring = generateKeyRingEntry("dev1");
  writeFileSync(file, `${ring}\n`, { mode: 0o600 });
  say(`generated the key that seals ${what} (${file})`);
  return ring;
}
export function redactPassword(url: string): string {
  try {
    const u = new URL(url);
    if (u.password !== "") u.password = "***";
    return u.toString();
  } catch {
    return url;
  }
}
