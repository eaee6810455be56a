/** Reading a service's RPC reply in tests: its body when it succeeded, its error when it failed; anything else throws. */
import type { RpcErrorBody, RpcReply } from "@treasury/contracts";

/** The status and body of a successful reply, or a thrown error naming what came back instead. */
export function ok(reply: RpcReply): { status: number; body: Record<string, unknown> } {
  if (!reply.ok) throw new Error(`expected success, got ${reply.error.code}: ${reply.error.message} ${JSON.stringify(reply.error.details ?? [])}`);
  return { status: reply.status, body: reply.body };
}

/** The error of a failed reply, or a thrown error naming the success that came back instead. */
export function err(reply: RpcReply): RpcErrorBody {
  if (reply.ok) throw new Error(`expected an error, got ${reply.status} ${JSON.stringify(reply.body)}`);
  return reply.error;
}
