import type postgres from "postgres";
import { parseCents, type Cents } from "@treasury/contracts";

export type Sql = postgres.Sql;
export type Tx = postgres.TransactionSql;
/** Anything that runs a query: the pool or a transaction. */
export type Q = postgres.ISql;
/** A piece of a statement (a tagged template never run on its own), inlined where another statement names it. */
export type Fragment = postgres.PendingQuery<postgres.Row[]>;

/** int8 columns arrive as strings (postgres.js default, kept on purpose): parsed into Cents here, once. */
export function money(v: string | number | bigint): Cents {
  return parseCents(v);
}

export function moneyOrNull(v: string | number | bigint | null): Cents | null {
  return v === null ? null : parseCents(v);
}

export function iso(d: Date | string | null): string | null {
  if (d === null) return null;
  return (d instanceof Date ? d : new Date(d)).toISOString();
}

export type Json = postgres.JSONValue;
