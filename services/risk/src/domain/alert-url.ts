/**
 * Where an alert webhook may point. Without the deployment's permission for private URLs (development and tests),
 * only https, and never a host named localhost or written as a loopback, private or link-local address.
 */
import { isIP } from "node:net";

const PRIVATE_V4 = [/^10\./, /^127\./, /^169\.254\./, /^192\.168\./, /^172\.(1[6-9]|2\d|3[01])\./, /^0\./, /^100\.(6[4-9]|[7-9]\d|1[01]\d|12[0-7])\./];

function isPrivateLiteral(host: string): boolean {
  const bare = host.startsWith("[") ? host.slice(1, -1).toLowerCase() : host;
  const family = isIP(bare);
  if (family === 4) return PRIVATE_V4.some((re) => re.test(bare));
  if (family === 6) return bare === "::1" || bare === "::" || /^f[cd]/.test(bare) || /^fe[89ab]/.test(bare) || bare.startsWith("::ffff:");
  return false;
}

/** Why the URL is refused, or undefined when it may be used. */
export function alertUrlProblem(raw: string, allowPrivate: boolean): string | undefined {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return "must be an absolute URL";
  }
  if (url.username !== "" || url.password !== "") return "must not carry credentials";
  if (allowPrivate) return url.protocol === "https:" || url.protocol === "http:" ? undefined : "must use https";
  if (url.protocol !== "https:") return "must use https";
  const host = url.hostname.toLowerCase();
  if (host === "localhost" || host.endsWith(".localhost") || isPrivateLiteral(host)) return "must not point at localhost or a private address";
  return undefined;
}
