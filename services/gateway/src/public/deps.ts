/** What a public listener is built from: service.ts passes the real ones, tests pass their own. */
import type { NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "pino";
import type { Histogram } from "prom-client";
import type { Authenticator } from "../auth.ts";
import type { RateLimiter } from "../ratelimit.ts";
import type { TrustProxy } from "../trust-proxy.ts";

export interface GatewayDeps {
  nc: NatsConnection;
  prefix: string;
  log: Logger;
  authenticator: Authenticator;
  limiter: RateLimiter;
  rpcTimeoutMs: number;
  healthTimeoutMs: number;
  authFailuresPerMin: number;
  /** Proxies allowed to name the client (trust-proxy.ts); the client IP keys anonymous and failed-auth limits. */
  trustProxy: TrustProxy;
  dbPing: () => Promise<void>;
  isClosing?: () => boolean;
  /** Public base URL of the alt listener (browser links); resolved after it listens when not configured. */
  altBaseUrl: () => string;
  httpDuration?: Histogram<string> | undefined;
  /** The operator console's HTTP base URL: the alt listener forwards /console there (unset: no console). */
  consoleUrl?: string | undefined;
}
