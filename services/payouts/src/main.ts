import { buildPayouts } from "./service.ts";

const svc = await buildPayouts(process.env);
svc.installSignalHandlers();
await svc.start();
