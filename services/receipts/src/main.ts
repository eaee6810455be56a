import { buildReceipts } from "./service.ts";

const svc = await buildReceipts(process.env);
svc.installSignalHandlers();
await svc.start();
