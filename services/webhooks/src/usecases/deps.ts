import type { Sql } from "@treasury/service-kit";
import type { Logger } from "pino";
import type { WebhooksConfig } from "../config.ts";
import type { Scope } from "../store/endpoints.ts";

/** What the use cases need: the pool, the service's webhook settings and a logger. */
export interface Deps {
  sql: Sql;
  config: WebhooksConfig;
  log: Logger;
}

export type { Scope };
