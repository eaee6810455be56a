/**
 * One HTTP attempt: POST the body with the given headers, never following redirects, bounded by a total
 * timeout, keeping the first KiB of the answer. Guarded attempts (live, and sandbox unless the deployment allows
 * private URLs: domain/url.ts) resolve the host through a guarded `lookup`, so the address actually connected to
 * is checked (a DNS answer that changed since creation cannot reach a private network), and IP-literal hosts are
 * checked before connecting.
 */
import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions } from "node:dns";
import http from "node:http";
import https from "node:https";
import { isIP, type LookupFunction } from "node:net";
import { isBlockedAddress } from "../domain/ip.ts";
import type { AttemptResult, AttemptTarget, WebhookHttp } from "../usecases/ports.ts";

export const RESPONSE_BODY_KEEP_BYTES = 1024;
/** Bytes read from a response before the socket is dropped: enough to keep the first KiB. */
const RESPONSE_READ_MAX_BYTES = 64 * 1024;

export class BlockedAddressError extends Error {
  constructor(host: string) {
    super(`address of ${host} is private, loopback or link-local`);
    this.name = "BlockedAddressError";
  }
}

/** Resolves like dns.lookup, but fails when any answer is an address a live webhook may not reach. */
export const guardedLookup: LookupFunction = (hostname, options, callback) => {
  const all: LookupAllOptions = { ...(typeof options === "object" ? options : {}), all: true };
  dnsLookup(hostname, all, (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => {
    if (err) return callback(err, "", 4);
    if (addresses.length === 0 || addresses.some((a) => isBlockedAddress(a.address))) {
      return callback(new BlockedAddressError(hostname) as NodeJS.ErrnoException, "", 4);
    }
    if (typeof options === "object" && options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
    const first = addresses[0] as LookupAddress;
    return callback(null, first.address, first.family);
  });
};

/** Resolves a host for the creation-time check; rejects with BlockedAddressError or the DNS error. */
export function checkResolvedHost(hostname: string): Promise<void> {
  return new Promise((resolve, reject) => {
    guardedLookup(hostname, { all: true }, (err) => (err ? reject(err) : resolve()));
  });
}

const SOCKETS_PER_HOST_MAX = 16;
const agents = {
  openHttp: new http.Agent({ keepAlive: true, maxSockets: SOCKETS_PER_HOST_MAX }),
  openHttps: new https.Agent({ keepAlive: true, maxSockets: SOCKETS_PER_HOST_MAX }),
  guardedHttps: new https.Agent({ keepAlive: true, maxSockets: SOCKETS_PER_HOST_MAX, lookup: guardedLookup }),
};

export function destroyAgents(): void {
  for (const a of Object.values(agents)) a.destroy();
}

/** Checks made before any connection: a parseable URL and, when guarded, https to a host that is not a blocked IP. */
function preflight(target: AttemptTarget): { url: URL } | { error: string; blocked: boolean } {
  let url: URL;
  try {
    url = new URL(target.url);
  } catch {
    return { error: "invalid url", blocked: false };
  }
  if (target.guarded) {
    const host = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
    if (url.protocol !== "https:") return { error: "endpoints must use https", blocked: true };
    if (isIP(host) !== 0 && isBlockedAddress(host)) return { error: new BlockedAddressError(host).message, blocked: true };
  }
  return { url };
}

/** Sends one POST. Never throws: every failure is an AttemptResult with `error`. */
export function postOnce(target: AttemptTarget, headers: Record<string, string>, body: string, timeoutMs: number): Promise<AttemptResult> {
  const started = performance.now();
  const elapsed = (): number => Math.round(performance.now() - started);
  const checked = preflight(target);
  if ("error" in checked) return Promise.resolve({ status: null, body: null, error: checked.error, blocked: checked.blocked, timeMs: elapsed() });
  const url = checked.url;
  const isHttps = url.protocol === "https:";
  const agent = target.guarded ? agents.guardedHttps : isHttps ? agents.openHttps : agents.openHttp;
  const payload = Buffer.from(body, "utf8");
  return new Promise<AttemptResult>((resolve) => {
    const req = (isHttps ? https : http).request(url, {
      method: "POST",
      agent,
      headers: { ...headers, "Content-Length": String(payload.length) },
    });
    const timer = setTimeout(() => req.destroy(new Error(`timed out after ${timeoutMs} ms`)), timeoutMs);
    let settled = false;
    const finish = (r: Omit<AttemptResult, "timeMs">): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ ...r, timeMs: elapsed() });
    };
    req.on("error", (err) => finish({ status: null, body: null, error: err.message || String(err), blocked: err instanceof BlockedAddressError }));
    req.on("response", (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      const done = (): void => {
        const buf = Buffer.concat(chunks).subarray(0, RESPONSE_BODY_KEEP_BYTES);
        finish({ status: res.statusCode ?? null, body: buf.toString("utf8"), error: null, blocked: false });
      };
      res.on("data", (c: Buffer) => {
        if (size < RESPONSE_READ_MAX_BYTES) chunks.push(c);
        size += c.length;
        if (size >= RESPONSE_READ_MAX_BYTES) {
          done();
          res.destroy();
        }
      });
      res.on("end", done);
      res.on("error", done);
    });
    req.end(payload);
  });
}

/** The port endpoint management uses (usecases/ports.ts): the creation-time address check and one POST. */
export const nodeWebhookHttp: WebhookHttp = {
  resolveHost: (hostname) =>
    checkResolvedHost(hostname).then(
      () => "public",
      (e: unknown) => (e instanceof BlockedAddressError ? "blocked" : "unresolved"),
    ),
  postOnce,
};
