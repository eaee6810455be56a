/**
 * TRUST_PROXY: which peers may name the client in X-Forwarded-For. The client IP keys the anonymous and
 * failed-authentication rate limits and is what hosted pages record, so whoever may set it can dodge those
 * limits and forge that record. Only a list of the proxies' addresses/CIDRs is taken: the gateway then believes
 * an X-Forwarded-For entry only when it comes from a peer in the list, so a client's own entries (left of the
 * proxy's) never count. `true` would trust every hop, letting any client name itself with one header; a hop
 * count cannot check that the peer is a proxy at all (Fastify trusts nothing for one, so every client would
 * share the proxy's IP). Both are refused at startup rather than warned about.
 */
import { isIP } from "node:net";
import { z } from "zod";

/** What Fastify's `trustProxy` gets: nothing trusted, or the proxies at these addresses. */
export type TrustProxy = false | string[];

const ADDRESSES_MAX = 64;

const EXPECTED = "set false, or the comma-separated addresses/CIDRs of the proxies in front of the gateway (the ingress controller's pod range)";
const REFUSED_TRUE = `\`true\` trusts every hop, so any client could choose its own IP with X-Forwarded-For; ${EXPECTED}`;
const REFUSED_HOPS = `a hop count cannot check that the peer is a proxy (the gateway would then see every client as the proxy); ${EXPECTED}`;

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
  if (value === "false") return false;
  if (value === "true") return { problem: REFUSED_TRUE };
  if (/^-?\d+$/.test(value)) return { problem: REFUSED_HOPS };
  const items = value.split(",").map((s) => s.trim());
  if (items.length > ADDRESSES_MAX) return { problem: `at most ${ADDRESSES_MAX} addresses or CIDRs` };
  for (const item of items) {
    const problem = addressProblem(item);
    if (problem !== undefined) return { problem: `${problem}; ${EXPECTED}` };
  }
  return items;
}

/** The config schema entry: unset means no proxy is trusted. */
export const TrustProxyEnv = z
  .string()
  .default("false")
  .transform((raw, ctx): TrustProxy => {
    const parsed = parseTrustProxy(raw);
    if (parsed === false || Array.isArray(parsed)) return parsed;
    ctx.addIssue({ code: "custom", message: parsed.problem });
    return z.NEVER;
  });
