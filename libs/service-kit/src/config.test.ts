// Proves loadConfig applies defaults and reports every missing or invalid variable at once, not just the first.
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { BaseEnv, ConfigError, loadConfig } from "./config.ts";

describe("loadConfig", () => {
  it("applies defaults and coerces numbers", () => {
    const cfg = loadConfig(BaseEnv, { DATABASE_URL: "postgres://x@h/db", HEALTH_PORT: "8081", NATS_PREFIX: "" });
    expect(cfg).toMatchObject({
      DATABASE_URL: "postgres://x@h/db",
      NATS_URL: "nats://127.0.0.1:4222",
      NATS_PREFIX: "",
      HEALTH_HOST: "127.0.0.1",
      HEALTH_PORT: 8081,
      LOG_LEVEL: "info",
      DB_POOL_MAX: 10,
      SHUTDOWN_TIMEOUT_MS: 10000,
      RPC_CONCURRENCY_MAX: 256,
    });
    expect(cfg.OTEL_EXPORTER_OTLP_ENDPOINT).toBeUndefined();
  });

  it("lists every problem with its variable name", () => {
    const schema = BaseEnv.extend({ SIGNING_KEY: z.string().min(32) });
    let caught: unknown;
    try {
      loadConfig(schema, { HEALTH_PORT: "not-a-port", LOG_LEVEL: "loud", DB_POOL_MAX: "0", NATS_PREFIX: "no-dot", SIGNING_KEY: "short" });
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    const problems = (caught as ConfigError).problems;
    const names = problems.map((p) => p.split(":")[0]);
    expect(names.sort()).toEqual(["DATABASE_URL", "DB_POOL_MAX", "HEALTH_PORT", "LOG_LEVEL", "NATS_PREFIX", "SIGNING_KEY"]);
    expect((caught as ConfigError).message).toContain("DATABASE_URL");
  });

  it("treats empty strings as unset so defaults apply and required values are reported missing", () => {
    expect(() => loadConfig(BaseEnv, { DATABASE_URL: "" })).toThrow(ConfigError);
    expect(loadConfig(BaseEnv, { DATABASE_URL: "postgres://h/db", HEALTH_PORT: "" }).HEALTH_PORT).toBe(0);
  });

  it("keeps outbox and inbox rows 14 days by default; an inbox retention shorter than the stream's max age is refused", () => {
    const cfg = loadConfig(BaseEnv, { DATABASE_URL: "postgres://h/db" });
    expect(cfg).toMatchObject({ OUTBOX_RETENTION_DAYS: 14, INBOX_RETENTION_DAYS: 14 });
    expect(loadConfig(BaseEnv, { DATABASE_URL: "postgres://h/db", INBOX_RETENTION_DAYS: "0", OUTBOX_RETENTION_DAYS: "0" })).toMatchObject({
      OUTBOX_RETENTION_DAYS: 0,
      INBOX_RETENTION_DAYS: 0,
    });
    expect(() => loadConfig(BaseEnv, { DATABASE_URL: "postgres://h/db", INBOX_RETENTION_DAYS: "3" })).toThrow(
      /INBOX_RETENTION_DAYS: must be 0 \(keep forever\) or at least 8/,
    );
  });
});
