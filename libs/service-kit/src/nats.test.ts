// Proves how a service's NATS connection options come from its configuration: credentials from NATS_USER/NATS_PASSWORD
// or the URL, TLS from NATS_TLS_* or a tls:// URL, and incomplete pairs refused at startup.
import { describe, expect, it } from "vitest";
import { BaseEnv, ConfigError, loadConfig } from "./config.ts";
import { natsConnectOptions, parseNatsUrl } from "./nats.ts";

const config = (env: Record<string, string>) => loadConfig(BaseEnv, { DATABASE_URL: "postgres://h/db", ...env });

describe("NATS connection options", () => {
  it("reads credentials from the URL, decoded, and leaves a URL without them as it is", () => {
    expect(parseNatsUrl("nats://ledger:p%40ss@127.0.0.1:4222")).toEqual({ server: "nats://127.0.0.1:4222", user: "ledger", password: "p@ss", tls: false });
    expect(parseNatsUrl("tls://nats:4222")).toEqual({ server: "tls://nats:4222", tls: true });
    expect(parseNatsUrl("127.0.0.1:4222")).toEqual({ server: "127.0.0.1:4222", tls: false });
  });

  it("keeps every node of a cluster's URL list, without credentials, and takes the credentials from the first", () => {
    expect(parseNatsUrl("nats://ledger:s3cret@127.0.0.1:4222, nats://127.0.0.1:4223,nats://ledger:s3cret@127.0.0.1:4224")).toEqual({
      server: "nats://127.0.0.1:4222,nats://127.0.0.1:4223,nats://127.0.0.1:4224",
      user: "ledger",
      password: "s3cret",
      tls: false,
    });
    expect(parseNatsUrl("nats://n1:4222,nats://n2:4222")).toEqual({ server: "nats://n1:4222,nats://n2:4222", tls: false });
  });

  it("takes the identity and TLS files from the configuration", () => {
    const opts = natsConnectOptions(
      config({ NATS_URL: "nats://nats:4222", NATS_USER: "ledger", NATS_PASSWORD: "s3cret", NATS_TLS_CA: "/etc/nats-ca/ca.crt" }),
      "ledger",
    );
    expect(opts).toMatchObject({ url: "nats://nats:4222", name: "ledger", user: "ledger", password: "s3cret", tls: { caFile: "/etc/nats-ca/ca.crt" } });
    expect(natsConnectOptions(config({}), "ledger")).toMatchObject({ user: undefined, password: undefined, tls: undefined });
  });

  it("refuses a user without a password and a certificate without its key, naming both", () => {
    const err = (() => {
      try {
        natsConnectOptions(config({ NATS_USER: "ledger", NATS_TLS_CERT: "/c.pem" }), "ledger");
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).problems).toEqual(["NATS_USER / NATS_PASSWORD: set both or neither", "NATS_TLS_CERT / NATS_TLS_KEY: set both or neither"]);
  });
});
