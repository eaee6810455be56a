/** The posting engine's series on the ledger's /metrics. */
import { Histogram, type Service } from "@treasury/service-kit";
import { BATCH_SIZE_MAX } from "./poster.ts";

/** Requests per posting transaction (group commit, ADR 0004): how much batching the load gets. */
export function postBatchSizes(registry: Service["metrics"]): Histogram {
  return new Histogram({
    name: "ledger_post_batch_size",
    help: "Posting requests committed together in one database transaction",
    buckets: [1, 2, 4, 8, 16, 32, 64, 128, BATCH_SIZE_MAX],
    registers: [registry],
  });
}
