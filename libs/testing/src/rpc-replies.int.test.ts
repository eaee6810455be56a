// Proves a callee cannot forge another callee's reply (ADR 0011), with the services' real NATS identities: kyc, having
// seen the reply subject of a request payouts sent it, predicts where payouts waits for the ledger's answer to
// `svc.ledger.post` and publishes a forged success there first; payouts still gets the ledger's own refusal. The
// tokens of a batch's requests are as unguessable as those of requests sent alone.
import type { Msg, NatsConnection } from "@nats-io/transport-node";
import { internalSubject, ledgerPostSubject, type NatsIdentity } from "@treasury/contracts";
import { connectNats, errorReply, parseNatsUrl, rpcCall } from "@treasury/service-kit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { setupTestEnv, waitFor, type TestEnv } from "./index.ts";

let env: TestEnv;
const connections: NatsConnection[] = [];
const RPC_TIMEOUT_MS = 10_000;

async function as(identity: NatsIdentity): Promise<NatsConnection> {
  const creds = env.natsCredentials(identity);
  if (creds === undefined) throw new Error("the harness's NATS runs without authorization (TEST_NATS_URL)");
  const nc = await connectNats({ url: parseNatsUrl(env.natsUrl).server, name: `${identity}-probe`, user: creds.user, password: creds.password });
  connections.push(nc);
  return nc;
}

/** Subscribes `nc` to `subject` and keeps what arrives, unanswered, for the test to answer when it chooses. */
async function standIn(nc: NatsConnection, subject: string): Promise<Msg[]> {
  const received: Msg[] = [];
  nc.subscribe(subject, { callback: (_err, msg) => void received.push(msg) });
  await nc.flush();
  return received;
}

/**
 * The forger's best guesses at the reply subject of payouts' next request: the subject it saw, moved to the ledger's
 * branch where there is one, with the last token as it was and as the next few of a counter would be.
 */
function guesses(seen: string): string[] {
  const tokens = seen.split(".");
  const last = tokens.pop() ?? "";
  const base = tokens.map((t) => (t === "kyc" ? "ledger" : t)).join(".");
  const n = /^[0-9a-z]+$/.test(last) ? parseInt(last, 36) : Number.NaN;
  const next = Number.isNaN(n) ? [] : [1, 2, 3].map((d) => (n + d).toString(36));
  return [last, ...next].map((t) => `${base}.${t}`);
}

beforeAll(async () => {
  env = await setupTestEnv();
});
afterAll(async () => {
  for (const nc of connections) await nc.close();
  await env?.cleanup();
});

describe("RPC replies", () => {
  it("gives payouts the ledger's refusal, not the success kyc forged into payouts' inbox", async () => {
    // Proves a compromised callee cannot answer a request sent to another: forged replies are refused or match nothing.
    const payouts = await as("payouts");
    const kyc = await as("kyc");
    const ledger = await as("ledger");
    const kycRequests = await standIn(kyc, internalSubject(env.prefix, "kyc", "getCreatorStatus"));
    const ledgerRequests = await standIn(ledger, ledgerPostSubject(env.prefix));

    const status = rpcCall(payouts, internalSubject(env.prefix, "kyc", "getCreatorStatus"), {}, { timeoutMs: RPC_TIMEOUT_MS });
    const seen = await waitFor(() => kycRequests[0] ?? false);
    seen.respond(JSON.stringify({ ok: true, status: 200, body: { status: "approved" } }));
    expect(await status).toMatchObject({ ok: true });

    const post = rpcCall(payouts, ledgerPostSubject(env.prefix), { amount: 100 }, { timeoutMs: RPC_TIMEOUT_MS });
    const posting = await waitFor(() => ledgerRequests[0] ?? false);
    const forged = JSON.stringify({ ok: true, status: 201, body: { transaction_id: "txn_forged" } });
    for (const subject of guesses(seen.reply ?? "")) kyc.publish(subject, forged);
    // Whatever the server let through of the forgery reaches payouts before the ledger's answer.
    await kyc.flush();
    posting.respond(JSON.stringify(errorReply("insufficient_balance", "The wallet cannot cover the payout")));
    expect(await post).toMatchObject({ ok: false, error: { code: "insufficient_balance" } });
  });

  it("sends each request of a batch under a token of 128 random bits", async () => {
    // Proves the tokens inside batch frames are not a counter: each is at least 22 base64url characters, all distinct.
    const payouts = await as("payouts");
    const ledger = await as("ledger");
    const batches = await standIn(ledger, ledgerPostSubject(env.prefix));
    const calls = [1, 2, 3].map((n) => rpcCall(payouts, ledgerPostSubject(env.prefix), { n }, { timeoutMs: RPC_TIMEOUT_MS }));
    const batch = await waitFor(() => batches[0] ?? false);
    // Frames are `<length>:<text>`: token, headers and body for each request.
    const tokens: string[] = [];
    let text = batch.string();
    while (text.length > 0) {
      const colon = text.indexOf(":");
      const length = Number(text.slice(0, colon));
      tokens.push(text.slice(colon + 1, colon + 1 + length));
      text = text.slice(colon + 1 + length);
    }
    const requestTokens = tokens.filter((_, i) => i % 3 === 0);
    expect(requestTokens).toHaveLength(3);
    for (const t of requestTokens) expect(t).toMatch(/^[A-Za-z0-9_-]{22,}$/);
    expect(new Set(requestTokens).size).toBe(3);
    const refusal = JSON.stringify(errorReply("insufficient_balance"));
    const replies = requestTokens.map((t) => `${t.length}:${t}${refusal.length}:${refusal}`);
    batch.respond(replies.join(""));
    for (const c of calls) expect(await c).toMatchObject({ ok: false, error: { code: "insufficient_balance" } });
  });
});
