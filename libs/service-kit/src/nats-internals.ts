/**
 * The one place the kit relies on the NATS client's internals rather than its public interface (ADR 0006):
 *
 * - the connection's options (`nc.options.inboxPrefix`, a field of the client's connection class that its
 *   NatsConnection interface does not declare): the kit's RPC inbox honours an inbox prefix, as the client's
 *   own request() does, so a deployment whose permissions allow only that prefix still gets its replies;
 * - publish() reading nothing of the headers it is given but `encode()`: the kit hands it request headers it
 *   wrote in the wire format itself (rpc-wire.ts), which saves the library's per-key validation per request.
 *
 * natsInternals() says whether a connection has them; nats-internals.int.test.ts asserts that the pinned
 * @nats-io/transport-node does, so a client upgrade that moves either fails there by name.
 */
import { headers } from "@nats-io/transport-node";
import type { MsgHdrs, NatsConnection } from "@nats-io/transport-node";

export type Support = "supported" | "unsupported";

/** The private field read here, possibly missing. */
interface ClientInternals {
  options?: { inboxPrefix?: unknown } | null;
}

const internalsOf = (nc: NatsConnection): ClientInternals => nc as unknown as ClientInternals;

/** Whether a connection (and the client library) has what this file relies on. */
export function natsInternals(nc: NatsConnection): { options: Support; headerEncode: Support } {
  const options = internalsOf(nc).options;
  return {
    options: typeof options === "object" && options !== null ? "supported" : "unsupported",
    // publish() calls encode() on the library's own headers; ours stand in for them only while it does.
    headerEncode: typeof (headers() as unknown as { encode?: unknown }).encode === "function" ? "supported" : "unsupported",
  };
}

/** The connection's inbox prefix ("" for the client's default), as its own request() uses it. */
export function inboxPrefix(nc: NatsConnection): string {
  const prefix = internalsOf(nc).options?.inboxPrefix;
  return typeof prefix === "string" ? prefix : "";
}

/** Headers already in wire format, handed to publish() in place of the library's own. */
export function asPublishHeaders(h: { encode(): Uint8Array }): MsgHdrs {
  return h as unknown as MsgHdrs;
}
