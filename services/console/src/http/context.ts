/** What the console's HTTP routes are built from: service.ts passes the real parts, tests the same (real) ones. */
import type { AdminClient } from "@treasury/service-kit/operator-client";
import type { Logger } from "pino";
import type { ConsoleDeps, OperatorCommands } from "../usecases/ports.ts";

export interface HttpDeps {
  deps: ConsoleDeps;
  commands: OperatorCommands;
  /** Fan-out reads (find, audit list) merged as the CLI merges them. */
  client: AdminClient;
  /** Served over https: `__Host-` cookies, Secure. */
  secureCookies: boolean;
  log: Logger;
}

export function sessionCookieName(secure: boolean): string {
  return secure ? "__Host-console_session" : "console_session";
}

/** A sign-in form's own token (there is no session yet to hold one): a cookie and a hidden field that must match. */
export function signInCookieName(secure: boolean): string {
  return secure ? "__Host-console_signin" : "console_signin";
}

export function cookieOptions(secure: boolean, maxAgeSec?: number): Record<string, unknown> {
  // __Host- demands Secure, Path=/ and no Domain; SameSite=Strict keeps the cookie off every cross-site request.
  return { path: "/", httpOnly: true, sameSite: "strict", secure, ...(maxAgeSec === undefined ? {} : { maxAge: maxAgeSec }) };
}
