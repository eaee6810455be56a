/**
 * Matches bank statement lines to ledger transactions: same currency and exact amount, dates at most
 * `dateWindowDays` apart, ranked by reference and description similarity and date distance. One-to-one and
 * deterministic: every candidate pair is scored, pairs are taken best first (ties broken by position in the
 * inputs), and a line or transaction already taken is skipped.
 *
 * Cost: ledger transactions are grouped by (currency, amount) and sorted by date, and indexed by reference, once, so
 * each bank line finds its candidates by binary search and lookup: up to `candidatesMax` whose reference it names
 * and up to `candidatesMax` nearest by date (identical lines spread over identical transactions, see
 * nearestCandidates). That keeps the whole run O(n log n) even when thousands of transactions share an amount
 * and a day, and every one of them still finds its counterpart.
 */
export interface BankLine {
  id: string;
  /** ISO `YYYY-MM-DD`. */
  date: string;
  /** Signed minor units. */
  amount: number;
  currency?: string;
  reference?: string;
  description?: string;
}

export type LedgerTransaction = BankLine;

export interface AutoMatchOptions {
  /** Largest distance in days between the two dates (default 3). */
  dateWindowDays?: number;
  /** Pairs scoring below this are not matched (0..1, default 0.5: the amount alone reaches it only within the window). */
  minConfidence?: number;
  /** Candidates scored per bank line by date, nearest first, and as many by reference (default 32). */
  candidatesMax?: number;
}

export interface MatchedPair {
  bank_id: string;
  ledger_id: string;
  /** 0..1: 0.5 for the exact amount, up to 0.2 for date closeness, up to 0.3 for reference/description. */
  confidence: number;
  days_apart: number;
  reference_match: boolean;
}

export interface MatchResult {
  matched: MatchedPair[];
  unmatched_bank: string[];
  unmatched_ledger: string[];
}

const DAY_MS = 86_400_000;
const AMOUNT_WEIGHT = 0.5;
const DATE_WEIGHT = 0.2;
const TEXT_WEIGHT = 0.3;

interface Prepared {
  id: string;
  index: number;
  day: number;
  key: string;
  reference: string;
  tokens: Set<string>;
}

function dayNumber(date: string, id: string): number {
  const m = /^(\d{4})-(\d\d)-(\d\d)/.exec(date);
  if (!m) throw new RangeError(`item ${id}: date ${date} is not YYYY-MM-DD`);
  return Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])) / DAY_MS;
}

function normaliseReference(ref: string | undefined): string {
  return (ref ?? "").toUpperCase().replace(/[^\p{L}\p{N}]/gu, "");
}

/**
 * Words split at spaces, each reduced to its letters and digits ("INV-10/" → "INV10", so a reference written
 * with punctuation still equals the other side's), three characters or more: short words say nothing.
 */
function tokens(text: string | undefined): Set<string> {
  const out = new Set<string>();
  for (const word of (text ?? "").toUpperCase().split(/\s+/)) {
    const t = word.replace(/[^\p{L}\p{N}]/gu, "");
    if (t.length >= 3) out.add(t);
  }
  return out;
}

function prepare(items: readonly BankLine[]): Prepared[] {
  return items.map((item, index) => {
    if (!Number.isSafeInteger(item.amount)) throw new RangeError(`item ${item.id}: amount must be an integer number of minor units`);
    const reference = normaliseReference(item.reference);
    const words = tokens(`${item.description ?? ""} ${item.reference ?? ""}`);
    return { id: item.id, index, day: dayNumber(item.date, item.id), key: `${item.currency ?? ""}|${item.amount}`, reference, tokens: words };
  });
}

function jaccard(a: Set<string>, b: Set<string>): number {
  if (a.size === 0 || b.size === 0) return 0;
  const [small, large] = a.size <= b.size ? [a, b] : [b, a];
  let common = 0;
  for (const t of small) if (large.has(t)) common++;
  return common / (a.size + b.size - common);
}

/** 1 when the references agree or one side's reference appears in the other's words; else word overlap. */
function textScore(bank: Prepared, ledger: Prepared): { score: number; reference: boolean } {
  if (bank.reference.length >= 3 && ledger.reference.length >= 3) {
    if (bank.reference === ledger.reference) return { score: 1, reference: true };
  }
  if ((bank.reference.length >= 4 && ledger.tokens.has(bank.reference)) || (ledger.reference.length >= 4 && bank.tokens.has(ledger.reference))) {
    return { score: 1, reference: true };
  }
  return { score: jaccard(bank.tokens, ledger.tokens), reference: false };
}

/** First position in `sorted` whose day is ≥ day. */
function lowerBound(sorted: readonly Prepared[], day: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((sorted[mid] as Prepared).day < day) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

interface Edge {
  bank: Prepared;
  ledger: Prepared;
  confidence: number;
  days: number;
  reference: boolean;
}

/** What a bank line's candidates are drawn from: its amount's transactions by date, and by reference. */
interface Bucket {
  byDay: Prepared[];
  /**
   * Bank lines of this amount seen so far, by day: each one's rank (see nearestCandidates). Made only for an
   * amount with more than one transaction: most amounts have one, and a map each would cost more than the match.
   */
  bankRanks?: Map<number, number>;
}

/** Transactions by reference (most references name one: no array for those), whatever their amount. */
type ReferenceIndex = Map<string, Prepared | Prepared[]>;

/**
 * Candidates inside the window, nearest dates first, up to `max`. Within one day the walk starts at the bank
 * line's `rank` (its position among the bank lines of its amount and day) and wraps: identical lines (a
 * marketplace's many sales of one price on one day) look at different transactions, so each can find its own
 * instead of all of them competing for the first few.
 */
function nearestCandidates(byDay: readonly Prepared[], day: number, rank: number, window: number, max: number): Prepared[] {
  const out: Prepared[] = [];
  for (let distance = 0; distance <= window && out.length < max; distance++) {
    for (const d of distance === 0 ? [day] : [day - distance, day + distance]) {
      const lo = lowerBound(byDay, d);
      const run = lowerBound(byDay, d + 1) - lo;
      for (let k = 0; k < run && out.length < max; k++) out.push(byDay[lo + ((rank + k) % run)] as Prepared);
    }
  }
  return out;
}

/**
 * The transactions of the bank line's amount whose reference is the bank line's reference or one of its words,
 * inside the window: scored whatever their position among same-amount transactions.
 */
function referenceCandidates(references: ReferenceIndex, bank: Prepared, window: number, max: number): Prepared[] {
  const out: Prepared[] = [];
  const take = (l: Prepared) => {
    if (out.length < max && l.key === bank.key && Math.abs(l.day - bank.day) <= window && !out.includes(l)) out.push(l);
  };
  const look = (key: string) => {
    const found = references.get(key);
    if (Array.isArray(found)) found.forEach(take);
    else if (found !== undefined) take(found);
  };
  if (bank.reference.length >= 3) look(bank.reference);
  for (const t of bank.tokens) if (t.length >= 4) look(t);
  return out;
}

/**
 * The nearest candidates and, when those may not be every transaction of the amount inside the window, the ones
 * its reference names (the index is built on first use: most amounts have few transactions, and never need it).
 */
function candidates(bucket: Bucket, references: () => ReferenceIndex, bank: Prepared, rank: number, window: number, max: number): Prepared[] {
  const out = nearestCandidates(bucket.byDay, bank.day, rank, window, max);
  if (out.length < max) return out;
  for (const l of referenceCandidates(references(), bank, window, max)) if (!out.includes(l)) out.push(l);
  return out;
}

function bucketsOf(ledger: readonly Prepared[]): Map<string, Bucket> {
  const buckets = new Map<string, Bucket>();
  for (const l of ledger) {
    const bucket = buckets.get(l.key);
    if (bucket === undefined) buckets.set(l.key, { byDay: [l] });
    else bucket.byDay.push(l);
  }
  for (const bucket of buckets.values()) {
    bucket.byDay.sort((a, b) => a.day - b.day || a.index - b.index);
    if (bucket.byDay.length > 1) bucket.bankRanks = new Map();
  }
  return buckets;
}

function referencesOf(ledger: readonly Prepared[]): ReferenceIndex {
  const references: ReferenceIndex = new Map();
  for (const l of ledger) {
    if (l.reference.length < 3) continue;
    const same = references.get(l.reference);
    if (same === undefined) references.set(l.reference, l);
    else if (Array.isArray(same)) same.push(l);
    else references.set(l.reference, [same, l]);
  }
  return references;
}

function compareEdges(a: Edge, b: Edge): number {
  return b.confidence - a.confidence || a.days - b.days || a.bank.index - b.bank.index || a.ledger.index - b.ledger.index;
}

export function autoMatch(bankLines: readonly BankLine[], ledgerTransactions: readonly LedgerTransaction[], opts: AutoMatchOptions = {}): MatchResult {
  const window = opts.dateWindowDays ?? 3;
  const minConfidence = opts.minConfidence ?? 0.5;
  const candidatesMax = opts.candidatesMax ?? 32;
  const bank = prepare(bankLines);
  const ledger = prepare(ledgerTransactions);

  const buckets = bucketsOf(ledger);
  let index: ReferenceIndex | undefined;
  const references = () => (index ??= referencesOf(ledger));
  const edges: Edge[] = [];
  for (const b of bank) {
    const bucket = buckets.get(b.key);
    if (!bucket) continue;
    const rank = bucket.bankRanks?.get(b.day) ?? 0;
    bucket.bankRanks?.set(b.day, rank + 1);
    for (const l of candidates(bucket, references, b, rank, window, candidatesMax)) {
      const days = Math.abs(l.day - b.day);
      const text = textScore(b, l);
      const confidence = AMOUNT_WEIGHT + DATE_WEIGHT * (1 - days / (window + 1)) + TEXT_WEIGHT * text.score;
      if (confidence >= minConfidence) edges.push({ bank: b, ledger: l, confidence, days, reference: text.reference });
    }
  }
  edges.sort(compareEdges);

  const bankTaken = new Uint8Array(bank.length);
  const ledgerTaken = new Uint8Array(ledger.length);
  // Pairs are reported in the bank lines' order, whatever order they were taken in.
  const pairs: (MatchedPair | undefined)[] = new Array<MatchedPair | undefined>(bank.length);
  for (const e of edges) {
    if (bankTaken[e.bank.index] || ledgerTaken[e.ledger.index]) continue;
    bankTaken[e.bank.index] = 1;
    ledgerTaken[e.ledger.index] = 1;
    pairs[e.bank.index] = {
      bank_id: e.bank.id,
      ledger_id: e.ledger.id,
      confidence: Math.round(e.confidence * 1000) / 1000,
      days_apart: e.days,
      reference_match: e.reference,
    };
  }
  return {
    matched: pairs.filter((p): p is MatchedPair => p !== undefined),
    unmatched_bank: bank.filter((b) => !bankTaken[b.index]).map((b) => b.id),
    unmatched_ledger: ledger.filter((l) => !ledgerTaken[l.index]).map((l) => l.id),
  };
}
