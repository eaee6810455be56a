import { buildTax } from "./service.ts";

const svc = await buildTax(process.env);
svc.installSignalHandlers();
await svc.start();
