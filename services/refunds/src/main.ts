import { buildRefunds } from "./service.ts";

const svc = await buildRefunds(process.env);
svc.installSignalHandlers();
await svc.start();
