/** Sends the alerts evaluations recorded (usecases/alerts.ts sendDueAlerts), on every replica: claims are leased. */
import type { Job, Service } from "@treasury/service-kit";
import { sendDueAlerts } from "../usecases/alerts.ts";
import type { RiskDeps } from "../usecases/ports.ts";

export function registerAlertSender(svc: Pick<Service, "every">, deps: RiskDeps, opts: { intervalMs: number; batchMax: number }): Job<number> {
  return svc.every({ name: "alerts", intervalMs: opts.intervalMs, run: () => sendDueAlerts(deps, opts.batchMax) });
}
