import type { Sql, Tx } from "@treasury/service-kit";
export type { Sql, Tx };
/** A pool or a transaction: queries that work in either. */
export type Q = Sql | Tx;

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export function isUuid(s: string): boolean {
  return UUID_RE.test(s);
}
