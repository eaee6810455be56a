import { buildLedger } from "./service.ts";

const svc = await buildLedger(process.env);
svc.installSignalHandlers();
await svc.start();
