/**
 * The ledger service: participants, wallets, holds, transfers, top-ups, withdrawals, and the posting engine
 * every other service moves money through (`svc.ledger.post`). Operations it has not built yet answer 501
 * not_implemented through the real path (gateway → NATS → this process), never a fake success.
 */
import { createService, type Service, type ServiceDeps } from "@treasury/service-kit";
import { registerHandlers } from "./handlers/index.ts";

export async function buildLedger(env: Record<string, string | undefined>, deps: ServiceDeps = {}): Promise<Service> {
  const svc = await createService({ name: "ledger", env, deps });
  registerHandlers(svc);
  return svc;
}
