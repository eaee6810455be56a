/**
 * The open-loop client's sockets: GET requests on up to `connections` keep-alive sockets, written and parsed by
 * hand as autocannon does (node:http's client costs about twice the CPU per request, and its own event-loop delay
 * would show up as the server's latency). A request sent while every socket is busy waits for a free one.
 */
import { connect, type Socket } from "node:net";

/** Called once per request with the answer's status, or 0 when the connection failed. */
export type Done = (status: number) => void;

/** Keep-alive sockets to one URL, each sending the same GET request. */
export class GetPool {
  private readonly idle: HttpConn[] = [];
  private readonly all: HttpConn[] = [];
  private readonly waiting: Done[] = [];
  private readonly url: URL;
  private readonly connections: number;
  private readonly requestBytes: Buffer;

  constructor(url: URL, headers: Record<string, string>, connections: number) {
    this.url = url;
    this.connections = connections;
    this.requestBytes = Buffer.from(
      `GET ${url.pathname}${url.search} HTTP/1.1\r\nHost: ${url.host}\r\n${Object.entries(headers)
        .map(([k, v]) => `${k}: ${v}\r\n`)
        .join("")}\r\n`,
    );
  }

  /** Sends the request on an idle socket, a new one while under `connections`, or once one comes free. */
  send(done: Done): void {
    let c = this.idle.pop();
    if (c === undefined && this.all.length < this.connections) this.all.push((c = new HttpConn(this, this.url, this.requestBytes)));
    if (c === undefined) return void this.waiting.push(done);
    c.send(done);
  }

  /** A socket whose answer is complete: it takes the next waiting request, or goes idle. */
  release(c: HttpConn): void {
    const next = this.waiting.shift();
    if (next) c.send(next);
    else this.idle.push(c);
  }

  /**
   * Takes a failed socket out of the pool: a socket the server closed is not used again, and a waiting request
   * gets a new one. Answers whether it was in the pool.
   */
  remove(c: HttpConn): boolean {
    const pooled = this.all.includes(c);
    for (const list of [this.all, this.idle]) if (list.includes(c)) list.splice(list.indexOf(c), 1);
    return pooled;
  }

  /** After a pooled socket failed: the next waiting request, on another socket. */
  sendWaiting(): void {
    const next = this.waiting.shift();
    if (next) this.send(next);
  }

  destroy(): void {
    for (const c of [...this.all]) c.socket.destroy();
  }
}

class HttpConn {
  readonly socket: Socket;
  private pending: Buffer = Buffer.alloc(0);
  private onDone: Done | undefined;
  private readonly pool: GetPool;
  private readonly requestBytes: Buffer;

  constructor(pool: GetPool, url: URL, requestBytes: Buffer) {
    this.pool = pool;
    this.requestBytes = requestBytes;
    this.socket = connect({ host: url.hostname, port: Number(url.port) });
    this.socket.setNoDelay(true);
    this.socket.on("data", (d: Buffer) => this.read(d));
    this.socket.on("error", () => this.fail());
    this.socket.on("close", () => this.fail());
  }

  send(done: Done): void {
    this.onDone = done;
    this.socket.write(this.requestBytes);
  }

  private read(d: Buffer): void {
    this.pending = this.pending.length === 0 ? d : Buffer.concat([this.pending, d]);
    const end = this.pending.indexOf("\r\n\r\n");
    if (end === -1) return;
    const head = this.pending.toString("latin1", 0, end);
    const length = /\r\ncontent-length:\s*(\d+)/i.exec(head);
    let total: number | undefined;
    if (length !== null) total = end + 4 + Number(length[1]);
    else if (/\r\ntransfer-encoding:\s*chunked/i.test(head)) total = chunkedEnd(this.pending, end + 4);
    else return this.fail();
    if (total === undefined || this.pending.length < total) return;
    this.pending = this.pending.subarray(total);
    const done = this.onDone;
    this.onDone = undefined;
    this.pool.release(this);
    done?.(Number(head.slice(9, 12)));
  }

  private fail(): void {
    const done = this.onDone;
    this.onDone = undefined;
    const pooled = this.pool.remove(this);
    this.socket.destroy();
    done?.(0);
    if (pooled) this.pool.sendWaiting();
  }
}

/** Where a chunked body that starts at `from` ends (after its last chunk and CRLF), or undefined if not all here. */
function chunkedEnd(buf: Buffer, from: number): number | undefined {
  let at = from;
  for (;;) {
    const lineEnd = buf.indexOf("\r\n", at);
    if (lineEnd === -1) return undefined;
    const size = parseInt(buf.toString("latin1", at, lineEnd), 16);
    if (Number.isNaN(size)) return undefined;
    if (size === 0) return buf.length >= lineEnd + 4 ? lineEnd + 4 : undefined;
    at = lineEnd + 2 + size + 2;
    if (at > buf.length) return undefined;
  }
}
