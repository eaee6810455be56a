import type { Sql, Tx } from "@treasury/service-kit";
export type { Sql, Tx };
/** A pool or a transaction: queries that work in either. */
export type Q = Sql | Tx;
