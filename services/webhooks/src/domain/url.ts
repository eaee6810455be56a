/**
 * Endpoint URL rules (docs/api.md, Webhooks). Live: https only, and the host must not be, or resolve to, a private,
 * loopback or link-local address (the resolution is checked by the caller, here and again at connect time).
 * Sandbox: https anywhere, or http to localhost / 127.0.0.1 / [::1] for local development.
 */
import { isIP } from "node:net";
import { DomainError } from "@treasury/contracts";
import { isBlockedAddress } from "./ip.ts";

const SANDBOX_HTTP_HOSTS = new Set(["localhost", "127.0.0.1", "[::1]"]);

export interface CheckedUrl {
  url: URL;
  /** The hostname as the resolver sees it (brackets removed), when a DNS check is still needed. */
  resolveHost: string | undefined;
}

function refuse(message: string): never {
  throw new DomainError("invalid_webhook_url", message, {
    hint: "POST /v1/webhooks {action: 'create', url: 'https://…'} with a public https URL (sandbox also accepts http://localhost)",
  });
}

/** Checks what can be checked without DNS; throws invalid_webhook_url. */
export function checkUrlShape(raw: string, livemode: boolean): CheckedUrl {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return refuse("url is not a valid absolute URL");
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") refuse("url must use https");
  if (url.username !== "" || url.password !== "") refuse("url must not carry credentials");
  if (url.hostname === "") refuse("url has no host");
  const host = url.hostname.toLowerCase();
  if (livemode) {
    if (url.protocol !== "https:") refuse("live webhook URLs must use https");
    const bare = host.startsWith("[") ? host.slice(1, -1) : host;
    if (isIP(bare) !== 0) {
      if (isBlockedAddress(bare)) refuse("live webhook URLs must not point at private, loopback or link-local addresses");
      return { url, resolveHost: undefined };
    }
    if (host === "localhost" || host.endsWith(".localhost")) refuse("live webhook URLs must not point at localhost");
    return { url, resolveHost: bare };
  }
  if (url.protocol === "http:" && !SANDBOX_HTTP_HOSTS.has(host)) {
    refuse("sandbox webhook URLs must use https, or http only to localhost / 127.0.0.1");
  }
  return { url, resolveHost: undefined };
}
