/** What the receipts use cases depend on; build() wires them. */
import type { AuthContext } from "@treasury/contracts";
import type { Reads } from "../adapters/reads.ts";
import type { Scope, Sql } from "../store/db.ts";
import type { Keyring } from "./keyring.ts";

export interface ReceiptsDeps {
  sql: Sql;
  reads: Reads;
  keyring: Keyring;
  /** Links a verification walks past the newest chain checkpoint before it records a new one (usecases/walk-chain.ts). */
  checkpointEvery: number;
}

export function scopeOfAuth(auth: AuthContext): Scope {
  return { orgId: auth.org_id, livemode: auth.livemode };
}
