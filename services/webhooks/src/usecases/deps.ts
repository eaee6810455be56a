import type { Sealer, Sql } from "@treasury/service-kit";
import type { Logger } from "pino";
import type { WebhooksConfig } from "../config.ts";
import type { Scope } from "../store/endpoints.ts";

/** What the use cases need: the pool, the service's webhook settings, the secrets' sealer and a logger. */
export interface Deps {
  sql: Sql;
  /** Seals signing secrets; undefined without WEBHOOK_SECRET_KEYS (create, rotate_secret and test then answer 503). */
  sealer: Sealer | undefined;
  config: WebhooksConfig;
  log: Logger;
}

export type { Scope };
