/**
 * Endpoint URL rules (docs/api.md, Webhooks). Live: https only, and the host must not be, or resolve to, a private,
 * loopback or link-local address (the resolution is checked by the caller, here and again at connect time).
 * Sandbox follows the same rules, except where the deployment allows private URLs (WEBHOOK_ALLOW_PRIVATE_URLS, for
 * local development and tests): then https anywhere, or http to localhost / 127.0.0.1 / [::1]. Without that, a
 * sandbox key could point an endpoint at the host's own ports and learn from the `test` action what answers there.
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

/** Whether an endpoint's deliveries are held to public addresses: always in live, in sandbox unless the deployment allows private URLs. */
export function isGuarded(livemode: boolean, allowPrivateUrls: boolean): boolean {
  return livemode || !allowPrivateUrls;
}

function refuse(message: string, allowPrivateUrls: boolean): never {
  throw new DomainError("invalid_webhook_url", message, {
    hint: `POST /v1/webhooks {action: 'create', url: 'https://…'} with a public https URL${allowPrivateUrls ? " (sandbox also accepts http://localhost)" : ""}`,
  });
}

/** Checks what can be checked without DNS; throws invalid_webhook_url. */
export function checkUrlShape(raw: string, livemode: boolean, allowPrivateUrls = false): CheckedUrl {
  const no = (message: string): never => refuse(message, allowPrivateUrls);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return no("url is not a valid absolute URL");
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") no("url must use https");
  if (url.username !== "" || url.password !== "") no("url must not carry credentials");
  if (url.hostname === "") no("url has no host");
  const host = url.hostname.toLowerCase();
  if (isGuarded(livemode, allowPrivateUrls)) {
    const what = livemode ? "live webhook URLs" : "webhook URLs";
    if (url.protocol !== "https:") no(`${what} must use https`);
    const bare = host.startsWith("[") ? host.slice(1, -1) : host;
    if (isIP(bare) !== 0) {
      if (isBlockedAddress(bare)) no(`${what} must not point at private, loopback or link-local addresses`);
      return { url, resolveHost: undefined };
    }
    if (host === "localhost" || host.endsWith(".localhost")) no(`${what} must not point at localhost`);
    return { url, resolveHost: bare };
  }
  if (url.protocol === "http:" && !SANDBOX_HTTP_HOSTS.has(host)) {
    no("sandbox webhook URLs must use https, or http only to localhost / 127.0.0.1");
  }
  return { url, resolveHost: undefined };
}
