/**
 * What an operator client needs to send the services' commands and merge their fan-out answers: the CLI
 * (scripts/admin.ts) and the operator console (services/console) use the same code, so both show the same thing.
 */
export { AdminClient, COMMAND_TIMEOUT_MS, errorOf, type FanOut, type Unanswered } from "./client.ts";
export { listAudit } from "./audit.ts";
export { find, type FindResult } from "./find.ts";
export { classify, HUB_KINDS, idsInRow, traceIdOf, type Kind, type Node, type Scope } from "./find-ids.ts";
