/**
 * Operator commands sent to their owners over NATS as the console's identity, the same requests the CLI sends
 * (ADR 0016): the owner checks the flags, does the work and writes its audit row with the operator as actor.
 */
import { ADMIN_COMMANDS, adminOperation, type AdminCommandSpec } from "@treasury/contracts";
import type { AdminClient } from "@treasury/service-kit/operator-client";
import type { OperatorCommands } from "../usecases/ports.ts";

const COMMANDS: Record<string, AdminCommandSpec> = ADMIN_COMMANDS;

export function natsOperatorCommands(client: AdminClient, timeoutMs: number): OperatorCommands {
  return {
    async run(command, request) {
      const spec = COMMANDS[command];
      if (spec === undefined) throw new Error(`unknown operator command "${command}"`);
      const reason = request.reason?.trim();
      const payload = { actor: request.actor, flags: request.flags, ...(reason === undefined || reason === "" ? {} : { reason }) };
      return client.call(spec.service, adminOperation(command), payload, { timeoutMs });
    },
  };
}
