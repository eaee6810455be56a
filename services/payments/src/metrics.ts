/** The service's own metrics, on its registry (`svc.metrics`). */
import { Counter, Histogram, type Service } from "@treasury/service-kit";
import type { DropReason } from "./domain/processor-match.ts";
import type { CheckFinding } from "./usecases/check-processor-sessions.ts";
import type { CompletionStep } from "./usecases/deps.ts";

export interface PaymentsMetrics {
  observeStep(step: CompletionStep, seconds: number): void;
  processorEventDropped(reason: DropReason): void;
  processorChecksFound(found: Record<CheckFinding, number>): void;
}

export function paymentsMetrics(registry: Service["metrics"]): PaymentsMetrics {
  // Where a completion's time goes (intent → ledger post → settle): the first place to look when checkouts slow down.
  const steps = new Histogram({
    name: "checkout_completion_step_seconds",
    help: "Time of each step of a checkout completion: recording the intent, the ledger post, settling",
    labelNames: ["step"] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });
  const stepChildren = {
    intent: steps.labels({ step: "intent" }),
    ledger_post: steps.labels({ step: "ledger_post" }),
    settle: steps.labels({ step: "settle" }),
  };
  // A processor report dropped for not matching its session: a test-mode payment aimed at a live session, or a
  // report of another session; any of them in production is a misconfigured key or endpoint, or someone trying.
  const droppedReports = new Counter({
    name: "processor_events_dropped_total",
    help: "Processor reports of a session (events, or sessions read back) dropped because they do not match the stored session, by reason",
    labelNames: ["reason"] as const,
    registers: [registry],
  });
  const processorChecks = new Counter({
    name: "processor_session_checks_total",
    help: "Processor sessions no event had settled, asked about at the processor, by what was found (paid: a payment whose webhook never came)",
    labelNames: ["found"] as const,
    registers: [registry],
  });
  return {
    observeStep: (step, seconds) => stepChildren[step].observe(seconds),
    processorEventDropped: (reason) => droppedReports.labels({ reason }).inc(),
    processorChecksFound: (found) => {
      for (const [f, n] of Object.entries(found)) if (n > 0) processorChecks.labels({ found: f }).inc(n);
    },
  };
}
