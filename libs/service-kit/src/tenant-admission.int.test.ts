// Proves fair admission over real NATS: one org bursting past its share of a process gets "unavailable, retry"
// for the excess at once, while another org's requests, sent during the burst, are all served.
import type { NatsConnection } from "@nats-io/transport-node";
import { rpcSubject, type AuthContext, type RpcReply } from "@treasury/contracts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectNats } from "./nats.ts";
import { rpcCall } from "./rpc-client.ts";
import { RpcServer } from "./rpc-server.ts";
import { captureLogger, gate, randomPrefix, TEST_NATS_URL, waitFor } from "./test-support.ts";

const prefix = randomPrefix();
const { log } = captureLogger("ledger");
let serverNc: NatsConnection;
let clientNc: NatsConnection;
let server: RpcServer;
/** Holds the bursting org's work until the test opens it. */
const held = gate();
let busy = 0;

const auth = (org: string): AuthContext => ({ org_id: org, livemode: false, key_id: "k", scopes: null, request_id: "req_x" });

beforeAll(async () => {
  serverNc = await connectNats({ url: TEST_NATS_URL, name: "admission-server" });
  clientNc = await connectNats({ url: TEST_NATS_URL, name: "admission-client" });
  server = new RpcServer({ nc: serverNc, prefix, service: "ledger", log, concurrencyMax: 8, tenantConcurrencyMax: 4 });
  server.handle("listParticipants", async (_req, ctx) => {
    if (ctx.auth.org_id === "org_burst") {
      busy++;
      await held.wait;
    }
    return { body: { org: ctx.auth.org_id } };
  });
  server.handleRaw("post", async (payload) => {
    if ((payload as { org_id: string }).org_id === "org_burst") await held.wait;
    return { ok: true, status: 200, body: {} };
  });
  server.start();
  await serverNc.flush();
});

afterAll(async () => {
  held.open();
  await server?.drain();
  await clientNc?.drain();
  await serverNc?.drain();
});

const call = (org: string): Promise<RpcReply> =>
  rpcCall(clientNc, rpcSubject(prefix, "ledger", "listParticipants"), { auth: auth(org), params: {}, query: {}, body: {} }, { timeoutMs: 10_000 });

describe("fair admission", () => {
  it("sheds one org's burst beyond its share and serves another org throughout", async () => {
    const burst = Array.from({ length: 40 }, () => call("org_burst"));
    await waitFor(() => busy === 4);
    // Another org, within its own share, is served in full while the burst holds its share.
    for (let round = 0; round < 5; round++) {
      const others = await Promise.all(Array.from({ length: 4 }, () => call("org_quiet")));
      expect(others.every((r) => r.ok)).toBe(true);
    }
    // Internal requests name their org in the payload: the same share applies.
    const post = await rpcCall(clientNc, `${prefix}svc.ledger.post`, { org_id: "org_burst" }, { timeoutMs: 10_000 });
    expect(post).toMatchObject({ ok: false, error: { code: "service_unavailable" } });
    held.open();
    const done = await Promise.all(burst);
    expect(done.filter((r) => r.ok)).toHaveLength(4);
    for (const r of done.filter((x) => !x.ok)) expect(r).toMatchObject({ ok: false, error: { code: "service_unavailable" } });
    // Once its work is done, the org is admitted again.
    expect((await call("org_burst")).ok).toBe(true);
  });
});
