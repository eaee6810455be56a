/**
 * Batch framing for the kit's RPC (ADR 0005). When one event-loop turn of a caller sends several requests to
 * the same subject, they travel as one NATS message, and a service sends the replies that one turn finished
 * for one caller as one message back. On a loopback broker each message costs a write and a wake-up in three
 * processes; under load that, not the work, was most of an RPC's cost.
 *
 * A batch request is a NATS message with the header `rpc-batch: 1` and, as its payload, per request three
 * frames: the reply token, the request's own headers in NATS wire format (request id, traceparent,
 * tracestate) and the request's JSON. Its reply subject is the caller's inbox plus a batch token. A batch
 * reply, sent to that subject, is per answered request two frames: its token and the reply's JSON. A frame is
 * `<length>:<text>`, the length in UTF-16 code units of the decoded payload (JSON.stringify output is
 * well-formed, headers are ASCII).
 */
import type { MsgHdrs } from "@nats-io/transport-node";

export const BATCH_VERSION = "1";

/** One frame. */
export function frame(text: string): string {
  return `${text.length}:${text}`;
}

/**
 * Splits a payload into frames, `width` per record; undefined for anything malformed (a bad length, a
 * truncated frame, a record cut short).
 */
export function decodeFrames(text: string, width: number): string[][] | undefined {
  const records: string[][] = [];
  let record: string[] = [];
  let at = 0;
  while (at < text.length) {
    const colon = text.indexOf(":", at);
    if (colon === -1 || colon === at || colon - at > 10) return undefined;
    let length = 0;
    for (let i = at; i < colon; i++) {
      const d = text.charCodeAt(i) - 48;
      if (d < 0 || d > 9) return undefined;
      length = length * 10 + d;
    }
    const end = colon + 1 + length;
    if (end > text.length) return undefined;
    record.push(text.slice(colon + 1, end));
    at = end;
    if (record.length === width) {
      records.push(record);
      record = [];
    }
  }
  return record.length === 0 && records.length > 0 ? records : undefined;
}

/**
 * A batched request's own headers, read from their wire text (`NATS/1.0\r\nKey: value\r\n…`): just what the
 * server and the trace propagator read (get, keys). Names compare case-insensitively, as MsgHdrs' do.
 */
export class FrameHeaders {
  /** Names as sent, and values, in order; a name set twice keeps its first value. Two or three entries. */
  private readonly names: string[] = [];
  private readonly lower: string[] = [];
  private readonly values: string[] = [];

  constructor(wire: string) {
    let at = wire.indexOf("\r\n");
    while (at !== -1 && at + 2 < wire.length) {
      const start = at + 2;
      const end = wire.indexOf("\r\n", start);
      const line = end === -1 ? wire.slice(start) : wire.slice(start, end);
      at = end;
      const c = line.indexOf(":");
      if (c <= 0) continue;
      const name = line.slice(0, c);
      const key = name.toLowerCase();
      if (this.lower.includes(key)) continue;
      this.names.push(name);
      this.lower.push(key);
      this.values.push(line.slice(c + 1).trim());
    }
  }

  get(k: string): string {
    let i = this.lower.indexOf(k);
    if (i === -1) i = this.lower.indexOf(k.toLowerCase());
    return i === -1 ? "" : (this.values[i] ?? "");
  }

  keys(): string[] {
    return [...this.names];
  }

  /** For the functions that take the client library's header type (they call get and keys only). */
  asMsgHdrs(): MsgHdrs {
    return this as unknown as MsgHdrs;
  }
}
