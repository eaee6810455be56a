/**
 * Benchmark-only process: a real service-kit service (NATS queue group, tracing, metrics, deadlines) whose
 * listParticipants handler does no work, so the gateway benchmark measures the gateway + NATS round trip.
 */
import { createService } from "@treasury/service-kit";

const svc = await createService({ name: "ledger", env: process.env });
svc.handle("listParticipants", async () => ({ body: { participants: [], total: 0, limit: 25, offset: 0 } }));
svc.installSignalHandlers();
await svc.start();
