/**
 * Bank statement import speed: lines per second for a ~1 MiB statement of each format (the import endpoint's
 * body limit), and the time to auto-match 100,000 bank lines against 100,000 ledger transactions.
 * Targets: parse ≥ 50,000 lines/s per format; auto-match 100k × 100k < 10 s.
 * Run: node --import tsx bench/imports-parse.bench.ts   (the last line printed is a JSON summary)
 */
import { autoMatch, parseStatement, type BankLine } from "@treasury/bank-statements";
import { generateStatement } from "../libs/bank-statements/src/testing/generate.ts";

const INPUT_BYTES = 1 << 20;
const RUNS = 7;
const MATCH_SIZE = 100_000;
const FORMATS = ["csv", "ofx", "camt053", "bai2", "mt940"] as const;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] as number;
}

const parse: Record<string, { lines_per_s: number; transactions_per_s: number; ms: number; lines: number; transactions: number }> = {};
for (const format of FORMATS) {
  const g = generateStatement(format, INPUT_BYTES);
  const input = Buffer.from(g.text);
  const opts = { format, ...(g.mapping ? { mapping: g.mapping } : {}) };
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const t0 = performance.now();
    const r = parseStatement(input, opts);
    times.push(performance.now() - t0);
    const got = r.statements.reduce((n, s) => n + s.transactions.length, 0);
    if (got !== g.transactions) throw new Error(`${format}: parsed ${got} transactions, generated ${g.transactions}`);
  }
  const ms = median(times);
  parse[format] = {
    lines_per_s: Math.round((g.lines / ms) * 1000),
    transactions_per_s: Math.round((g.transactions / ms) * 1000),
    ms: Number(ms.toFixed(1)),
    lines: g.lines,
    transactions: g.transactions,
  };
  console.log(
    `${format.padEnd(8)} ${(input.length / 1024).toFixed(0)} KiB, ${g.lines} lines, ${g.transactions} transactions: median ${ms.toFixed(1)} ms = ${parse[format].lines_per_s} lines/s, ${parse[format].transactions_per_s} transactions/s (target ≥ 50,000 lines/s)`,
  );
}

/** Ledger transactions and their bank lines (dates shifted up to ±2 days, references inside the bank text), 5% noise. */
function matchScenario(n: number): { bank: BankLine[]; ledger: BankLine[] } {
  const day = (k: number, shift = 0): string => new Date(Date.UTC(2024, 0, 1) + ((k % 365) + shift) * 86_400_000).toISOString().slice(0, 10);
  const ledger: BankLine[] = [];
  const bank: BankLine[] = [];
  for (let i = 0; i < n; i++) {
    const amount = (((i * 7919) % 2_000_000) + 100) * (i % 3 === 0 ? 1 : -1);
    ledger.push({ id: `L${i}`, date: day(i), amount, currency: "EUR", reference: `INV-${i}`, description: `Invoice ${i} customer ${i % 997}` });
    const noise = i % 20 === 19;
    bank.push({
      id: `B${i}`,
      date: day(i, (i % 5) - 2),
      amount: noise ? 900_000_000 + i : amount,
      currency: "EUR",
      description: `SEPA INV-${i} customer ${i % 997}`,
    });
  }
  return { bank, ledger };
}

const { bank, ledger } = matchScenario(MATCH_SIZE);
const t0 = performance.now();
const result = autoMatch(bank, ledger);
const matchMs = performance.now() - t0;
const expected = MATCH_SIZE - MATCH_SIZE / 20;
const wrong = result.matched.filter((p) => p.bank_id.slice(1) !== p.ledger_id.slice(1)).length;
console.log(
  `auto-match ${MATCH_SIZE} × ${MATCH_SIZE}: ${(matchMs / 1000).toFixed(2)} s, ${result.matched.length} matched (${expected} expected, ${wrong} wrong), ${result.unmatched_bank.length} bank lines unmatched (target < 10 s)`,
);
console.log(
  JSON.stringify({
    parse_lines_per_s: Object.fromEntries(Object.entries(parse).map(([f, p]) => [f, p.lines_per_s])),
    parse_min_lines_per_s: Math.min(...Object.values(parse).map((p) => p.lines_per_s)),
    auto_match_100k_s: Number((matchMs / 1000).toFixed(2)),
    auto_match_matched: result.matched.length,
    auto_match_wrong: wrong,
  }),
);
