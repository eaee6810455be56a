import type postgres from "postgres";
import { parseCents, type Cents } from "@treasury/contracts";

export type Sql = postgres.Sql;
export type Tx = postgres.TransactionSql;
/** Anything that runs a query: the pool or a transaction. */
export type Q = postgres.ISql;

/** int8 columns arrive as strings (postgres.js default, kept on purpose): parsed into Cents here, once. */
export function money(v: string | number | bigint): Cents {
  return parseCents(v);
}

export function moneyOrNull(v: string | number | bigint | null): Cents | null {
  return v === null ? null : parseCents(v);
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Ids from clients are checked before they reach a uuid column, so a malformed one is "not found", not a 500. */
export function isUuid(s: string): boolean {
  return UUID_RE.test(s);
}

export function iso(d: Date | string | null): string | null {
  if (d === null) return null;
  return (d instanceof Date ? d : new Date(d)).toISOString();
}

export type Json = postgres.JSONValue;
