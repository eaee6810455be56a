/** What the use cases need, as ports only (ports.ts): the store, the network, the secrets' sealer and signing keys, settings, a logger and the clock. */
import type { Sealer } from "@treasury/service-kit";
import type { Logger } from "pino";
import type { WebhooksConfig } from "../config.ts";
import type { WebhookHttp, WebhooksStore } from "./ports.ts";
import type { SigningKeys } from "./signing-keys.ts";

export interface Deps {
  store: WebhooksStore;
  http: WebhookHttp;
  /** Seals signing secrets; undefined without WEBHOOK_SECRET_KEYS (create, rotate_secret and test then answer 503). */
  sealer: Sealer | undefined;
  /** The platform's Ed25519 keys: sign `ed25519` endpoints' attempts, published as the JWKS. */
  signingKeys: SigningKeys;
  config: WebhooksConfig;
  log: Logger;
  now: () => Date;
}
