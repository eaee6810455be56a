/**
 * A statement-parsing worker for tests: answers as the real one (../worker.ts) does, except that a statement
 * reading exactly ENDLESS_STATEMENT (endless.ts) never finishes, as a reader stuck on a pathological file would not.
 */
import { parentPort } from "node:worker_threads";
import { answer } from "../answer.ts";
import type { ParseJob, WorkerMessage } from "../protocol.ts";
import { ENDLESS_STATEMENT } from "./endless.ts";

const port = parentPort;
if (port === null) throw new Error("runs as a worker thread");
port.on("message", (job: ParseJob) => {
  if (job.input === ENDLESS_STATEMENT) {
    for (;;) {
      // Busy, as a backtracking pattern is: no await, nothing an event loop could run in between.
    }
  }
  port.postMessage(answer(job));
});
port.postMessage({ type: "ready" } satisfies WorkerMessage);
