/** The statement that the test worker (endless-worker.ts) never finishes reading. */
export const ENDLESS_STATEMENT = "endless statement";

/** The test worker's module, for StatementParserPool's workerUrl. */
export const ENDLESS_WORKER_URL = new URL("./endless-worker.ts", import.meta.url);
