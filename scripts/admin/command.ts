/** The shape of an admin command and of what its audit row records. */
import type { Ctx, Q } from "./context.ts";

/** Where an action landed: its org and environment when it has one, and every id it touched. */
export interface AuditTarget {
  orgId?: string | null | undefined;
  livemode?: boolean | null | undefined;
  targetIds: string[];
  /** What the command was given and answered that helps later readers; never a secret. */
  details?: Record<string, unknown> | undefined;
}

export interface AuditSpec {
  /** `<group>.<command>` as typed on the command line, e.g. `key.revoke`. */
  action: string;
  /**
   * The change is a database write made here: it and its audit row commit in one transaction (the command
   * writes through `ctx.q`). Otherwise the row is written once the outcome is known.
   */
  atomic: boolean;
  /**
   * Successes are already kept, in the same transaction as the change, by the table named here (KYC decisions
   * in kyc.review_actions, which `admin audit list` reads too); only failed attempts are written to the log.
   */
  successKeptIn?: string;
  /**
   * The row's org, environment, ids and details. `result` is undefined when the command failed; then only the
   * flags are known. Reads go through `q` (inside the transaction of an atomic command).
   */
  target(ctx: Ctx, q: Q, result: unknown): AuditTarget | Promise<AuditTarget>;
}

export interface Command {
  /** One line of help: the flags the command takes and what it answers. */
  usage: string;
  /** How many positional arguments it takes (a file name). */
  positionals?: number;
  /** Commands that change something are recorded in the audit log. */
  audit?: AuditSpec;
  run(ctx: Ctx): Promise<unknown>;
}

export type Commands = Record<string, Command>;
