/**
 * Run as its own process (`node --import tsx pathological-probe.ts BYTES`): reads each pathological statement of
 * about BYTES and prints one JSON line per input as soon as it is done, with the time it took and how it ended
 * (parsed, or the error code). A reader that hangs stops the output there; the caller's timeout ends the process.
 */
import { parseStatement } from "../parse.ts";
import { pathologicalStatements } from "./pathological.ts";

const bytes = Number(process.argv[2] ?? 1 << 20);
for (const p of pathologicalStatements(bytes)) {
  const started = performance.now();
  let outcome = "parsed";
  try {
    parseStatement(p.text, p.opts);
  } catch (error) {
    outcome = (error as { code?: string }).code ?? `thrown: ${(error as Error).message}`;
  }
  const ms = Math.round(performance.now() - started);
  process.stdout.write(`${JSON.stringify({ name: p.name, format: p.opts.format, input_bytes: Buffer.byteLength(p.text), ms, outcome })}\n`);
}
