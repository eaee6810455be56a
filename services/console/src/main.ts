import { buildConsole } from "./service.ts";

const svc = await buildConsole(process.env);
svc.installSignalHandlers();
await svc.start();
