/** How the posting transaction awaits its pipelined statements, and reads what PostgreSQL refused. */
import { DomainError } from "@treasury/contracts";
import postgres from "postgres";

/** A reference (org, env, kind, reference_id) already taken: committed, or claimed by a concurrent transaction. */
export function isReferenceClaimed(e: unknown): boolean {
  return e instanceof postgres.PostgresError && e.code === "23505" && e.constraint_name === "transactions_reference_uq";
}

/** A hold or sale reference already taken: the client's error, answered to the request that caused it. */
export function referenceTakenError(e: unknown): DomainError | undefined {
  if (!(e instanceof postgres.PostgresError) || e.code !== "23505") return undefined;
  if (e.constraint_name === "holds_reference_uq") return new DomainError("duplicate_reference_id", "A hold with this reference_id exists");
  if (e.constraint_name === "sales_pkey") return new DomainError("duplicate_reference_id", "This sale reference was already recorded");
  return undefined;
}

/** What pipelined statements answer, in sending order. */
export type Settled<T extends readonly unknown[]> = { -readonly [K in keyof T]: Awaited<T[K]> };

/**
 * Awaits pipelined statements of one connection: all of them settle (no rejection is left unobserved when an
 * earlier one fails), then the first error in sending order is thrown.
 */
export async function settled<T extends readonly unknown[]>(promises: T): Promise<Settled<T>> {
  const results = await Promise.allSettled(promises);
  for (const r of results) if (r.status === "rejected") throw r.reason;
  return results.map((r) => (r as PromiseFulfilledResult<unknown>).value) as Settled<T>;
}
