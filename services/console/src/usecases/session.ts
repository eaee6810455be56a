/**
 * The session a request's cookie names, if it is still alive: within its absolute end and used within the idle
 * timeout. A dead one is deleted. Each use moves the idle end (written at most once a minute per session).
 */
import type { ConsoleDeps, Session } from "./ports.ts";
import { sessionIdHash } from "./sign-in.ts";

/** last_seen_at is written no more often than this: a page's asset requests do not each write a row. */
const TOUCH_INTERVAL_MS = 60_000;
const SESSION_ID_RE = /^[A-Za-z0-9_-]{16,128}$/;

export async function currentSession(deps: Pick<ConsoleDeps, "sessions" | "policy" | "now">, sessionId: string | undefined): Promise<Session | undefined> {
  if (sessionId === undefined || !SESSION_ID_RE.test(sessionId)) return undefined;
  const idHash = sessionIdHash(sessionId);
  const session = await deps.sessions.get(idHash);
  if (session === undefined) return undefined;
  const now = deps.now().getTime();
  const idle = now - session.lastSeenAt.getTime() > deps.policy.idleMs;
  if (idle || now >= session.expiresAt.getTime() || session.operator.disabledAt !== null) {
    await deps.sessions.delete(idHash);
    return undefined;
  }
  if (now - session.lastSeenAt.getTime() > TOUCH_INTERVAL_MS) await deps.sessions.touch(idHash, new Date(now));
  return session;
}
