import { buildWebhooks } from "./service.ts";

const svc = await buildWebhooks(process.env);
svc.installSignalHandlers();
await svc.start();
