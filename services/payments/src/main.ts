import { buildPayments } from "./service.ts";

const svc = await buildPayments(process.env);
svc.installSignalHandlers();
await svc.start();
