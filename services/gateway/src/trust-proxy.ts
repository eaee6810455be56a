/**
 * TRUST_PROXY: which peers may name the client in X-Forwarded-For. The client IP keys the anonymous and
 * failed-authentication rate limits and is what hosted pages record, so whoever may set it can dodge those
 * limits and forge that record. Fastify takes a hop count or a list of addresses/CIDRs; `true` would trust
 * every hop, letting any client name itself with one header, so it is refused rather than warned about.
 */
import { isIP } from "node:net";
import { z } from "zod";

/** What Fastify's `trustProxy` gets: nothing trusted, the last n hops, or the proxies at these addresses. */
export type TrustProxy = false | number | string[];

/** More proxies than this in front of one service is a misconfiguration, not a topology. */
const HOPS_MAX = 10;
const ADDRESSES_MAX = 64;

const REFUSED_TRUE =
  "`true` trusts every hop, so any client could choose its own IP with X-Forwarded-For; set the hop count of the proxies in front of the gateway (1 behind the ingress controller) or their addresses/CIDRs";

/** A trusted address or CIDR, or the reason it is not one. A /0 would trust everyone, like `true`. */
function addressProblem(item: string): string | undefined {
  const [address = "", bits, extra] = item.split("/");
  const family = isIP(address);
  if (family === 0 || extra !== undefined) return `"${item}" is not an IP address or CIDR`;
  if (bits === undefined) return undefined;
  const max = family === 4 ? 32 : 128;
  if (!/^\d{1,3}$/.test(bits) || Number(bits) < 1 || Number(bits) > max) return `"${item}" needs a prefix length from 1 to ${max}`;
  return undefined;
}

/** Parses the variable; an object with a `problem` is what to report. */
export function parseTrustProxy(raw: string): TrustProxy | { problem: string } {
  const value = raw.trim();
  if (value === "false" || value === "0") return false;
  if (value === "true") return { problem: REFUSED_TRUE };
  if (/^\d+$/.test(value)) {
    const hops = Number(value);
    return hops <= HOPS_MAX ? hops : { problem: `a hop count above ${HOPS_MAX} is not a real proxy chain` };
  }
  const items = value.split(",").map((s) => s.trim());
  if (items.length > ADDRESSES_MAX) return { problem: `at most ${ADDRESSES_MAX} addresses or CIDRs` };
  for (const item of items) {
    const problem = addressProblem(item);
    if (problem !== undefined) return { problem: `${problem}; expected false, a hop count, or a comma-separated list of addresses/CIDRs` };
  }
  return items;
}

/** The config schema entry: unset means no proxy is trusted. */
export const TrustProxyEnv = z
  .string()
  .default("false")
  .transform((raw, ctx): TrustProxy => {
    const parsed = parseTrustProxy(raw);
    if (parsed === false || typeof parsed === "number" || Array.isArray(parsed)) return parsed;
    ctx.addIssue({ code: "custom", message: parsed.problem });
    return z.NEVER;
  });
