/**
 * The console's own operator command (`npm run admin -- operator create --email … --role … --password-stdin`):
 * the CLI reads the password from stdin and sends it in the request's flags over NATS (TLS in production); it is
 * hashed here and never written anywhere else, the audit row included (it names the email and role only).
 */
import type { AdminRequest } from "@treasury/contracts";
import { flag, requiredFlag, type Service } from "@treasury/service-kit";
import { checkNewOperator, createOperator, presentOperator, type NewOperator } from "../usecases/create-operator.ts";
import type { ConsoleDeps } from "../usecases/ports.ts";

function decodeCreate(request: AdminRequest): NewOperator {
  return checkNewOperator({ email: requiredFlag(request, "email"), role: requiredFlag(request, "role"), password: flag(request, "password") ?? "" });
}

export function registerAdminCommands(svc: Pick<Service, "handleAdmin">, deps: ConsoleDeps): void {
  svc.handleAdmin("operator create", {
    decode: decodeCreate,
    audit: {
      atomic: false,
      target: ({ input, request }, result) => {
        const operator = result?.["operator"] as { id?: string } | undefined;
        return {
          targetIds: [operator?.id, input?.email ?? flag(request, "email")],
          details: { email: input?.email ?? flag(request, "email") ?? null, role: input?.role ?? flag(request, "role") ?? null },
        };
      },
    },
    run: async ({ input }) => ({ operator: presentOperator(await createOperator(deps, input)) }),
  });
}
