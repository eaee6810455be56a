import { buildInvoicing } from "./service.ts";

const svc = await buildInvoicing(process.env);
svc.installSignalHandlers();
await svc.start();
