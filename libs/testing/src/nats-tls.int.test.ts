// Proves a service reaches a NATS that requires TLS and authorization as it does in Kubernetes (ADR 0011, docs/deploy.md):
// with NATS_TLS_CA it verifies the server's certificate and connects as its own identity; without the CA, without TLS or
// without its password it does not get in. A real nats-server with the production (unprefixed) permission matrix.
import { execFileSync } from "node:child_process";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { connect } from "@nats-io/transport-node";
import { natsConfigString, natsServerAuthorization, natsUsers } from "@treasury/contracts";
import { BaseEnv, connectNats, loadConfig, natsConnectOptions, type NatsConnection } from "@treasury/service-kit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, makeScratchDir, startNats, type NatsServer } from "./index.ts";

let dir: string;
let server: NatsServer;
let port: number;
const passwords: Record<string, string> = {};
const open: NatsConnection[] = [];

function openssl(args: string[]): void {
  execFileSync("openssl", args, { cwd: dir, stdio: "pipe" });
}

/** A CA and a server certificate for 127.0.0.1 (the client names it `localhost`) signed by it, as k8s/make-secrets.sh makes them for `nats`. */
function makeCertificates(): void {
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
  openssl(["req", "-x509", ...ec, "-days", "1", "-subj", "/CN=test-nats-ca", "-keyout", "ca.key", "-out", "ca.crt"]);
  openssl(["req", ...ec, "-subj", "/CN=127.0.0.1", "-keyout", "tls.key", "-out", "tls.csr"]);
  writeFileSync(join(dir, "ext.cnf"), "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n");
  openssl(["x509", "-req", "-in", "tls.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial", "-days", "1", "-extfile", "ext.cnf", "-out", "tls.crt"]);
}

function serviceConfig(extra: Record<string, string>) {
  return loadConfig(BaseEnv, { DATABASE_URL: "postgres://unused@127.0.0.1/unused", NATS_URL: `nats://127.0.0.1:${port}`, ...extra });
}

beforeAll(async () => {
  dir = makeScratchDir("nats-tls-");
  makeCertificates();
  for (const identity of ["ledger", "payments"]) passwords[identity] = `pw-${identity}-${Math.random().toString(36).slice(2)}`;
  const users = natsUsers((identity) => natsConfigString(passwords[identity] ?? `unused-${Math.random()}`));
  const tls = `tls {\n  cert_file: ${natsConfigString(join(dir, "tls.crt"))}\n  key_file: ${natsConfigString(join(dir, "tls.key"))}\n}\n`;
  writeFileSync(join(dir, "nats.conf"), tls + natsServerAuthorization(users), { mode: 0o600 });
  port = await freePort();
  server = await startNats({ storeDir: join(dir, "store"), port, configFile: join(dir, "nats.conf") });
}, 60_000);
afterAll(async () => {
  for (const nc of open) await nc.close();
  await server?.stop();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

describe("NATS over TLS with the service's identity", () => {
  it("connects with NATS_TLS_CA as its own user, and works within its permissions", async () => {
    // Proves the kit's configuration path (NATS_USER/NATS_PASSWORD/NATS_TLS_CA) reaches a TLS server as the service.
    const config = serviceConfig({ NATS_USER: "ledger", NATS_PASSWORD: passwords["ledger"] ?? "", NATS_TLS_CA: join(dir, "ca.crt") });
    const nc = await connectNats(natsConnectOptions(config, "ledger"));
    open.push(nc);
    const got: string[] = [];
    nc.subscribe("svc.ledger.>", { callback: (_e, m) => void got.push(m.subject) });
    await nc.flush();
    expect(nc.info?.tls_required).toBe(true);
    const payments = await connectNats(
      natsConnectOptions(serviceConfig({ NATS_USER: "payments", NATS_PASSWORD: passwords["payments"] ?? "", NATS_TLS_CA: join(dir, "ca.crt") }), "payments"),
    );
    open.push(payments);
    payments.publish("svc.ledger.post", "{}");
    await payments.flush();
    await nc.flush();
    expect(got).toEqual(["svc.ledger.post"]);
  });

  it("refuses the connection without the CA, without TLS, or with a wrong or missing password", async () => {
    // Proves neither an unverified server nor an unauthenticated client gets a connection.
    const ca = join(dir, "ca.crt");
    const password = passwords["ledger"] ?? "";
    await expect(connect({ servers: `127.0.0.1:${port}`, user: "ledger", pass: password, tls: {}, reconnect: false })).rejects.toThrow();
    await expect(connect({ servers: `127.0.0.1:${port}`, user: "ledger", pass: password, tls: null, reconnect: false })).rejects.toThrow();
    await expect(connect({ servers: `127.0.0.1:${port}`, user: "ledger", pass: "wrong", tls: { caFile: ca }, reconnect: false })).rejects.toThrow(
      /Authorization/i,
    );
    await expect(connect({ servers: `127.0.0.1:${port}`, tls: { caFile: ca }, reconnect: false })).rejects.toThrow(/Authorization/i);
    expect(() => natsConnectOptions(serviceConfig({ NATS_USER: "ledger" }), "ledger")).toThrow(/NATS_USER \/ NATS_PASSWORD/);
  });
});
