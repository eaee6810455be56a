export * from "./errors.ts";
export * from "./money.ts";
export * from "./ids.ts";
export * from "./auth.ts";
export * from "./rpc.ts";
export * from "./events.ts";
export * from "./routes.ts";
export * as schemas from "./schemas.ts";
export * from "./openapi.ts";
