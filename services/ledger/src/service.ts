/**
 * The ledger service: participants, wallets, holds, transfers, top-ups, withdrawals, and the posting engine
 * every other service moves money through (`svc.ledger.post`). Operations it has not built yet answer 501
 * not_implemented through the real path (gateway → NATS → this process), never a fake success.
 */
import { createService, type Service, type ServiceDeps } from "@treasury/service-kit";
import { z } from "zod";
import { registerHandlers } from "./handlers/index.ts";

/** The ledger's own settings: how many group-commit batches may be in flight at once (ADR 0004). */
const LedgerEnv = { POST_BATCH_SLOTS: z.coerce.number().int().min(1).max(4).default(4) };

export async function buildLedger(env: Record<string, string | undefined>, deps: ServiceDeps = {}): Promise<Service> {
  const svc = await createService({ name: "ledger", env, deps, extraEnv: LedgerEnv });
  registerHandlers(svc, {}, { batchSlots: svc.config.POST_BATCH_SLOTS });
  return svc;
}
