import { buildKyc } from "./service.ts";

const svc = await buildKyc(process.env);
svc.installSignalHandlers();
await svc.start();
