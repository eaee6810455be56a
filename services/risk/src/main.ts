import { buildRisk } from "./service.ts";

const svc = await buildRisk(process.env);
svc.installSignalHandlers();
await svc.start();
