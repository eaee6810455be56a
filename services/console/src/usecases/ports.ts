/**
 * The ports the console's use cases depend on, declared here beside them; store/ implements them on PostgreSQL,
 * adapters/ sends operator commands to their owners over NATS.
 */
import type { Role } from "../domain/roles.ts";

export interface Operator {
  id: string;
  email: string;
  role: Role;
  passwordHash: string;
  createdAt: Date;
  disabledAt: Date | null;
}

export interface OperatorStore {
  /** Answers undefined when the email is taken. */
  insert(o: { id: string; email: string; role: Role; passwordHash: string }): Promise<Operator | undefined>;
  byEmail(email: string): Promise<Operator | undefined>;
}

export interface Session {
  idHash: string;
  operator: Operator;
  csrfToken: string;
  createdAt: Date;
  lastSeenAt: Date;
  expiresAt: Date;
}

export interface SessionStore {
  insert(s: { idHash: string; operatorId: string; csrfToken: string; at: Date; expiresAt: Date }): Promise<void>;
  get(idHash: string): Promise<Session | undefined>;
  touch(idHash: string, at: Date): Promise<void>;
  delete(idHash: string): Promise<void>;
  /** Deletes sessions past their absolute end, at most `limit`; answers how many. */
  purgeExpired(before: Date, limit: number): Promise<number>;
}

export interface AttemptStore {
  record(a: { email: string; succeeded: boolean; clientIp: string | null; at: Date }): Promise<void>;
  /** Failed attempts for the email since `since` and after its last successful one. */
  failuresSince(email: string, since: Date): Promise<number>;
}

/** An operator command sent to the service that owns it, as the signed-in operator (ADR 0016, 0021). */
export interface OperatorCommands {
  run(command: string, request: { actor: string; reason?: string | undefined; flags: Record<string, string | boolean> }): Promise<Record<string, unknown>>;
}

export interface SessionPolicy {
  idleMs: number;
  absoluteMs: number;
  /** Failed sign-ins within lockoutWindowMs that lock the address for the rest of the window. */
  lockoutFailures: number;
  lockoutWindowMs: number;
}

export interface ConsoleDeps {
  operators: OperatorStore;
  sessions: SessionStore;
  attempts: AttemptStore;
  policy: SessionPolicy;
  now: () => Date;
  newId: () => string;
  /** 32 random bytes, base64url: session ids and CSRF tokens. */
  randomToken: () => string;
}
