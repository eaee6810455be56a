/**
 * Run as its own process (`node --expose-gc --import tsx memory-probe.ts`): parses a generated statement of the
 * given size per format and prints, as one JSON line, the heap it grew by while parsing (before any collection:
 * parse garbage included) and what the result retains, each next to the input size.
 */
import { parseStatement } from "../parse.ts";
import { generateStatement } from "./generate.ts";

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("run with --expose-gc");
const bytes = Number(process.argv[2] ?? 1 << 20);
type Probe = { input_bytes: number; transactions: number; parsed: number; grown_bytes: number; retained_bytes: number };

function collect(): void {
  (gc as () => void)();
  (gc as () => void)();
}

function probe(format: "ofx" | "camt053" | "bai2" | "mt940" | "csv"): Probe {
  const g = generateStatement(format, bytes);
  const input = Buffer.from(g.text);
  const opts = { format, ...(g.mapping ? { mapping: g.mapping } : {}) };
  // Warm the code paths so that compiling them does not count as parse memory.
  parseStatement(input, opts);
  collect();
  const before = process.memoryUsage().heapUsed;
  const result = parseStatement(input, opts);
  const grown = process.memoryUsage().heapUsed - before;
  collect();
  const retained = process.memoryUsage().heapUsed - before;
  const parsed = result.statements.reduce((n, s) => n + s.transactions.length, 0);
  return { input_bytes: input.length, transactions: g.transactions, parsed, grown_bytes: grown, retained_bytes: retained };
}

const out: Record<string, Probe> = {};
for (const format of ["ofx", "camt053", "bai2", "mt940", "csv"] as const) {
  out[format] = probe(format);
  collect();
}
process.stdout.write(`${JSON.stringify(out)}\n`);
