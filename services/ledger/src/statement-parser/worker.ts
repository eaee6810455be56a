/**
 * A statement-parsing worker thread: reads one job at a time from the pool (pool.ts) and answers with the parse
 * or the refusal. Parsing runs here, never on the ledger's event loop, so a statement that takes long to read
 * delays nothing but itself; the pool ends this thread when a job runs past its budget.
 */
import { parentPort } from "node:worker_threads";
import { answer } from "./answer.ts";
import type { ParseJob, WorkerMessage } from "./protocol.ts";

const port = parentPort;
if (port === null) throw new Error("the statement parser runs as a worker thread of the ledger (statement-parser/pool.ts)");
port.on("message", (job: ParseJob) => port.postMessage(answer(job)));
port.postMessage({ type: "ready" } satisfies WorkerMessage);
