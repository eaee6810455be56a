import { installCrashHandlers } from "@treasury/service-kit";
import { buildGateway } from "./service.ts";

const gateway = await buildGateway(process.env);
installCrashHandlers(gateway.log);
for (const signal of ["SIGTERM", "SIGINT"] as const) {
  process.once(signal, () => {
    void gateway.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        console.error(err);
        process.exit(1);
      },
    );
  });
}
