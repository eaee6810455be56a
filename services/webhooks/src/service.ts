/**
 * The webhooks service. Operations it has not built yet answer 501 not_implemented through the real path
 * (gateway → NATS → this process), never a fake success.
 */
import { createService, type Service, type ServiceDeps } from "@treasury/service-kit";

export async function buildWebhooks(env: Record<string, string | undefined>, deps: ServiceDeps = {}): Promise<Service> {
  return createService({ name: "webhooks", env, deps });
}
