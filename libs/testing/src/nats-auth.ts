// NATS authorization for a private test server (ADR 0011): every identity of the permission matrix with a fresh
// password, its permissions relaxed only by the test files' subject prefixes, and a test superuser for what tests
// do themselves (spies, stand-in services, assertions on streams).
import { randomBytes } from "node:crypto";
import { NATS_IDENTITIES, natsConfigString, natsServerAuthorization, natsUsers } from "@treasury/contracts";

/** The harness's own user: allowed everything, its credentials are in the URL the harness hands out. */
export const TEST_NATS_SUPERUSER = "test";

export interface TestNatsAuth {
  /** Each identity's password (services, the operator CLI). */
  passwords: Record<string, string>;
  superuserPassword: string;
  /** The nats-server configuration: the `authorization` block. */
  config: string;
}

const newPassword = (): string => randomBytes(18).toString("hex");

export function generateTestNatsAuth(): TestNatsAuth {
  const passwords = Object.fromEntries(NATS_IDENTITIES.map((i) => [i, newPassword()]));
  const superuserPassword = newPassword();
  const users = natsUsers((i) => natsConfigString(passwords[i] ?? ""), { anyPrefix: true, alsoAnswer: [TEST_NATS_SUPERUSER] }, [
    { user: TEST_NATS_SUPERUSER, password: natsConfigString(superuserPassword) },
  ]);
  return { passwords, superuserPassword, config: natsServerAuthorization(users) };
}

/** `url` with `user:password@` in it; of a cluster's URL list, the first (parseNatsUrl reads them from there). */
export function withNatsCredentials(url: string, user: string, password: string): string {
  const [first = "", ...others] = url.split(",");
  const u = new URL(first.trim());
  u.username = encodeURIComponent(user);
  u.password = encodeURIComponent(password);
  return [u.toString().replace(/\/$/, ""), ...others].join(",");
}
