/**
 * Signing in and out. A sign-in always starts a new session with a new random id (an id planted before sign-in
 * is never promoted) and its own CSRF token; the id is stored only as its SHA-256. Errors: sign_in_failed (wrong
 * email or password, or a disabled account: one answer for all, so it says nothing of which exist),
 * sign_in_locked (lockoutFailures failed attempts within the window; checked before the password).
 */
import { createHash } from "node:crypto";
import { DomainError } from "@treasury/contracts";
import { decoyHash, verifyPassword } from "../domain/passwords.ts";
import { normalizeEmail } from "./create-operator.ts";
import type { ConsoleDeps, Operator } from "./ports.ts";

export function sessionIdHash(sessionId: string): string {
  return createHash("sha256").update(sessionId).digest("base64url");
}

export interface SignedIn {
  sessionId: string;
  csrfToken: string;
  operator: Operator;
  expiresAt: Date;
}

async function passwordMatches(operator: Operator | undefined, password: string): Promise<boolean> {
  // An unknown address costs the same scrypt as a known one.
  const ok = await verifyPassword(password, operator?.passwordHash ?? (await decoyHash()));
  return ok && operator !== undefined && operator.disabledAt === null;
}

export async function signIn(deps: ConsoleDeps, input: { email: string; password: string; clientIp: string | null }): Promise<SignedIn> {
  const email = normalizeEmail(input.email) ?? input.email.trim().toLowerCase().slice(0, 320);
  const now = deps.now();
  const since = new Date(now.getTime() - deps.policy.lockoutWindowMs);
  if ((await deps.attempts.failuresSince(email, since)) >= deps.policy.lockoutFailures) {
    throw new DomainError(
      "sign_in_locked",
      `Too many failed sign-ins for this address; try again in ${Math.round(deps.policy.lockoutWindowMs / 60_000)} minutes.`,
    );
  }
  const operator = await deps.operators.byEmail(email);
  const ok = await passwordMatches(operator, input.password);
  await deps.attempts.record({ email, succeeded: ok, clientIp: input.clientIp, at: now });
  if (!ok || operator === undefined) throw new DomainError("sign_in_failed", "The email or password is wrong.");
  const sessionId = deps.randomToken();
  const csrfToken = deps.randomToken();
  const expiresAt = new Date(now.getTime() + deps.policy.absoluteMs);
  await deps.sessions.insert({ idHash: sessionIdHash(sessionId), operatorId: operator.id, csrfToken, at: now, expiresAt });
  return { sessionId, csrfToken, operator, expiresAt };
}

export async function signOut(deps: Pick<ConsoleDeps, "sessions">, sessionId: string): Promise<void> {
  await deps.sessions.delete(sessionIdHash(sessionId));
}
