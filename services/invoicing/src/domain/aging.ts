/**
 * Aging: each open amount in the bucket of its days past due at the as-of date, summed per bucket and per
 * customer or vendor. Pure; amounts exact in integer cents.
 */
import { cents, type Cents, type schemas } from "@treasury/contracts";

const DAY_MS = 86_400_000;

export interface OpenItem {
  /** The customer or vendor the row is for: its id where it has one, and its name. */
  party_id: string | null;
  party: string;
  /** YYYY-MM-DD. */
  due_date: string;
  amount_cents: number;
}

type Buckets = Record<schemas.AgingBucket, Cents>;

const empty = (): Buckets => ({ current: cents(0), days_1_30: cents(0), days_31_60: cents(0), days_61_90: cents(0), over_90: cents(0) });

/** Whole days from the due date to the as-of date (both calendar days); 0 or less is not yet past due. */
export function daysPastDue(dueDate: string, asOfDate: string): number {
  return Math.round((Date.parse(`${asOfDate}T00:00:00Z`) - Date.parse(`${dueDate}T00:00:00Z`)) / DAY_MS);
}

export function bucketOf(days: number): schemas.AgingBucket {
  if (days <= 0) return "current";
  if (days <= 30) return "days_1_30";
  if (days <= 60) return "days_31_60";
  if (days <= 90) return "days_61_90";
  return "over_90";
}

export interface AgingRow {
  id: string | null;
  name: string;
  buckets: Buckets;
  total_cents: Cents;
}

/** Buckets over every item, and one row per party (sorted by name), each with its buckets and total. */
export function age(items: readonly OpenItem[], asOfDate: string): { as_of_date: string; buckets: Buckets; total_cents: Cents; rows: AgingRow[] } {
  const buckets = empty();
  const rows = new Map<string, AgingRow>();
  let total = 0;
  for (const item of items) {
    const bucket = bucketOf(daysPastDue(item.due_date, asOfDate));
    buckets[bucket] = cents(buckets[bucket] + item.amount_cents);
    const key = item.party_id === null ? `name:${item.party}` : `id:${item.party_id}`;
    const row = rows.get(key) ?? { id: item.party_id, name: item.party, buckets: empty(), total_cents: cents(0) };
    row.buckets[bucket] = cents(row.buckets[bucket] + item.amount_cents);
    row.total_cents = cents(row.total_cents + item.amount_cents);
    rows.set(key, row);
    total += item.amount_cents;
  }
  return { as_of_date: asOfDate, buckets, total_cents: cents(total), rows: [...rows.values()].sort((a, b) => a.name.localeCompare(b.name)) };
}
