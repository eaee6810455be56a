// Proves the auth context is trusted because of who may publish it (ADR 0011): with the real gateway, ledger and kyc on
// the harness's NATS (the permission matrix), a service that is not the gateway cannot put another org's auth context
// on a public operation, a service that does not move money cannot post to the ledger, while the same requests from
// the identities the matrix allows are answered; internal subjects answer what the public ones answer.
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { internalSubject, ledgerPostSubject, natsInboxPrefix, newRequestId, rpcSubject, type AuthContext, type NatsIdentity } from "@treasury/contracts";
import { parseNatsUrl, rpcCall } from "@treasury/service-kit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, startStack, type Stack } from "./stack.ts";

/** A request no one answers: the server refused to route it. Short, as the answer is known not to come. */
const DENIED_TIMEOUT_MS = 1_500;
const ANSWER_TIMEOUT_MS = 10_000;

let s: Stack;
const conns: NatsConnection[] = [];
let orgB: string;
let participantId: string;

async function as(identity: NatsIdentity): Promise<NatsConnection> {
  const creds = s.env.natsCredentials(identity);
  if (creds === undefined) throw new Error("the harness's NATS runs without authorization (TEST_NATS_URL)");
  const nc = await connect({ servers: parseNatsUrl(s.env.natsUrl).server, user: creds.user, pass: creds.password, inboxPrefix: natsInboxPrefix(identity) });
  conns.push(nc);
  return nc;
}

const authOf = (orgId: string): AuthContext => ({ org_id: orgId, livemode: false, key_id: "key_forged", scopes: null, request_id: newRequestId() });

async function ledgerTransactions(orgId: string, reference: string): Promise<number> {
  const [row] = await s.env.adminSql<
    { n: number }[]
  >`select count(*)::int as n from ledger.transactions where org_id = ${orgId} and reference_id = ${reference}`;
  return row?.n ?? 0;
}

beforeAll(async () => {
  s = await startStack({ services: ["ledger", "kyc"] });
  orgB = `org_victim_${Math.random().toString(36).slice(2, 10)}`;
  participantId = `creator_${Math.random().toString(36).slice(2, 8)}`;
  const created = await call(s.baseUrl, "POST", "/v1/participants", {
    key: s.testKey,
    body: { participant_id: participantId, display_name: "Ada", default_split_percent: 80 },
  });
  expect(created.status).toBe(201);
}, 120_000);
afterAll(async () => {
  for (const nc of conns) await nc.close();
  await s?.stop();
});

describe("who may send what to the services", () => {
  it("refuses a connection without credentials", async () => {
    // Proves the broker itself authenticates: a process that merely reaches NATS gets nothing.
    await expect(connect({ servers: parseNatsUrl(s.env.natsUrl).server, reconnect: false })).rejects.toThrow(/Authorization Violation/i);
  });

  it("a service cannot send a public operation with another org's auth context; the gateway's identity can", async () => {
    // Proves the auth context of a public operation can only come from the gateway.
    const request = { auth: authOf(s.orgId), params: { participant_id: participantId }, query: {}, body: {} };
    const forged = await rpcCall(await as("payments"), rpcSubject(s.env.prefix, "ledger", "getParticipant"), request, { timeoutMs: DENIED_TIMEOUT_MS });
    expect(forged.ok ? "answered" : forged.error.code).toBe("service_timeout");
    const fromGateway = await rpcCall(await as("gateway"), rpcSubject(s.env.prefix, "ledger", "getParticipant"), request, { timeoutMs: ANSWER_TIMEOUT_MS });
    expect(fromGateway.ok && (fromGateway.body["participant"] as { id: string }).id).toBe(participantId);
  });

  it("answers an internal call from an allowed caller with the body of the public operation", async () => {
    // Proves services moved off public subjects still get the same answers (kyc and payments read participants).
    const request = { auth: authOf(s.orgId), params: { participant_id: participantId }, query: {}, body: {} };
    const internal = await rpcCall(await as("kyc"), internalSubject(s.env.prefix, "ledger", "getParticipant"), request, { timeoutMs: ANSWER_TIMEOUT_MS });
    const viaApi = await call(s.baseUrl, "GET", `/v1/participants/${participantId}`, { key: s.testKey });
    expect(internal.ok).toBe(true);
    expect(internal.ok && (internal.body["participant"] as { id: string; wallet_id: string }).wallet_id).toBe(
      (viaApi.body["participant"] as { wallet_id: string }).wallet_id,
    );
    const notAllowed = await rpcCall(await as("webhooks"), internalSubject(s.env.prefix, "ledger", "getParticipant"), request, {
      timeoutMs: DENIED_TIMEOUT_MS,
    });
    expect(notAllowed.ok ? "answered" : notAllowed.error.code).toBe("service_timeout");
  });

  it("only a money-moving service posts to the ledger: webhooks moves nothing in another org, payments does", async () => {
    // Proves svc.ledger.post, which names its org in the body, is out of reach of services that do not move money.
    const post = (reference: string) => ({
      org_id: orgB,
      livemode: false,
      kind: "adjust",
      reference_id: reference,
      postings: [{ debit: { system: "sandbox_funding" }, credit: { system: "platform_cash" }, amount: 100 }],
    });
    const forged = await rpcCall(await as("webhooks"), ledgerPostSubject(s.env.prefix), post("forged-1"), { timeoutMs: DENIED_TIMEOUT_MS });
    expect(forged.ok ? "answered" : forged.error.code).toBe("service_timeout");
    expect(await ledgerTransactions(orgB, "forged-1")).toBe(0);
    const allowed = await rpcCall(await as("payments"), ledgerPostSubject(s.env.prefix), post("allowed-1"), { timeoutMs: ANSWER_TIMEOUT_MS });
    expect(allowed.ok).toBe(true);
    expect(await ledgerTransactions(orgB, "allowed-1")).toBe(1);
  });

  it("the gateway reaches every running service's health subject and public operations", async () => {
    // Proves the gateway can do what it needs under its permissions (the whole e2e suite runs the same way).
    const health = await call(s.baseUrl, "GET", "/v1/health-check");
    const services = (health.body["data"] as { services: Record<string, string> }).services;
    expect(services["ledger"]).toBe("ok");
    expect(services["kyc"]).toBe("ok");
    const listed = await call(s.baseUrl, "GET", "/v1/participants", { key: s.testKey });
    expect(listed.status).toBe(200);
  });
});
