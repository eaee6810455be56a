// Proves the NATS authorization generated from the permission matrix (ADR 0011), on the harness's real nats-server:
// no anonymous connections, and each identity publishes and subscribes only where the matrix says, each refusal
// next to an allowed neighbour so that the check can fail.
import { connect, type NatsConnection, type Status } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { eventsStreamName, internalSubject, ledgerPostSubject, natsInboxPrefix, rpcSubject, SERVICES, type NatsIdentity } from "@treasury/contracts";
import { connectNats, ensureEventsStream, parseNatsUrl } from "@treasury/service-kit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { setupTestEnv, type TestEnv } from "./index.ts";

interface Probe {
  nc: NatsConnection;
  /** Permission errors the server sent this connection. */
  denied: string[];
}

let env: TestEnv;
let spy: NatsConnection;
const probes: Probe[] = [];
/** Subjects the spy (the test superuser) saw. */
const seen: string[] = [];

async function as(identity: NatsIdentity): Promise<Probe> {
  const creds = env.natsCredentials(identity);
  if (creds === undefined) throw new Error("the harness's NATS runs without authorization (TEST_NATS_URL)");
  const nc = await connect({ servers: parseNatsUrl(env.natsUrl).server, user: creds.user, pass: creds.password, inboxPrefix: natsInboxPrefix(identity) });
  const probe: Probe = { nc, denied: [] };
  void (async () => {
    for await (const s of nc.status() as AsyncIterable<Status>) if (s.type === "error") probe.denied.push(String(s.error.message));
  })();
  probes.push(probe);
  return probe;
}

/** Publishes as `probe`, then makes sure the server has routed it: whatever the spy gets, it has got by then. */
async function publishes(probe: Probe, subject: string): Promise<{ delivered: boolean; denied: boolean }> {
  const before = seen.length;
  probe.nc.publish(subject, "{}");
  await probe.nc.flush();
  await spy.flush();
  return { delivered: seen.slice(before).includes(subject), denied: probe.denied.some((d) => d.includes(subject)) };
}

/** Subscribes as `probe`; the server's answer to a refused subscription arrives before the flush's. */
async function subscribes(probe: Probe, subject: string): Promise<boolean> {
  let failed = false;
  probe.nc.subscribe(subject, { callback: (err) => void (failed ||= err !== null) });
  await probe.nc.flush();
  return !failed && !probe.denied.some((d) => d.includes(subject));
}

beforeAll(async () => {
  env = await setupTestEnv();
  spy = await connectNats({ url: env.natsUrl, name: "permissions-spy" });
  spy.subscribe(">", { callback: (_err, msg) => void seen.push(msg.subject) });
  await spy.flush();
});
afterAll(async () => {
  for (const p of probes) await p.nc.close();
  await spy?.close();
  await env?.cleanup();
});

describe("NATS authorization from the permission matrix", () => {
  it("refuses a connection without credentials, or with another identity's password", async () => {
    // Proves the server authenticates every connection: anonymous and wrong-password connections are refused.
    const server = parseNatsUrl(env.natsUrl).server;
    await expect(connect({ servers: server, reconnect: false })).rejects.toThrow(/Authorization Violation/i);
    await expect(connect({ servers: server, user: "ledger", pass: env.natsCredentials("payments")?.password ?? "", reconnect: false })).rejects.toThrow(
      /Authorization Violation/i,
    );
    const ok = await as("ledger");
    expect(ok.nc.isClosed()).toBe(false);
  });

  it("lets only the money-moving services post to the ledger: webhooks cannot publish svc.ledger.post, payments can", async () => {
    // Proves "only payments, payouts and refunds publish svc.ledger.post", with and without the test prefix.
    const webhooks = await as("webhooks");
    const payments = await as("payments");
    expect(await publishes(webhooks, ledgerPostSubject(env.prefix))).toEqual({ delivered: false, denied: true });
    expect(await publishes(webhooks, ledgerPostSubject(""))).toEqual({ delivered: false, denied: true });
    expect(await publishes(payments, ledgerPostSubject(env.prefix))).toEqual({ delivered: true, denied: false });
  });

  it("lets only the gateway publish public operations: payments reaches the ledger's internal subject only", async () => {
    // Proves a service cannot send a public operation (and so an auth context of its choosing) where the gateway does.
    const payments = await as("payments");
    const gateway = await as("gateway");
    expect(await publishes(payments, rpcSubject(env.prefix, "ledger", "getParticipant"))).toEqual({ delivered: false, denied: true });
    expect(await publishes(payments, rpcSubject(env.prefix, "ledger", "recordSale"))).toEqual({ delivered: false, denied: true });
    expect(await publishes(payments, internalSubject(env.prefix, "ledger", "getParticipant"))).toEqual({ delivered: true, denied: false });
    expect(await publishes(gateway, rpcSubject(env.prefix, "ledger", "getParticipant"))).toEqual({ delivered: true, denied: false });
    expect(await publishes(gateway, ledgerPostSubject(env.prefix))).toEqual({ delivered: false, denied: true });
  });

  it("keeps payments away from kyc: no public, internal or health subject of it; payouts calls its internal reads", async () => {
    // Proves internal subjects are open only to the callers the matrix names.
    const payments = await as("payments");
    const payouts = await as("payouts");
    for (const subject of [
      rpcSubject(env.prefix, "kyc", "getBusinessVerification"),
      internalSubject(env.prefix, "kyc", "getCreatorStatus"),
      `${env.prefix}svc.kyc._health`,
    ]) {
      expect(await publishes(payments, subject), subject).toEqual({ delivered: false, denied: true });
    }
    expect(await publishes(payouts, internalSubject(env.prefix, "kyc", "getCreatorStatus"))).toEqual({ delivered: true, denied: false });
  });

  it("lets each service subscribe to its own subjects and inbox only", async () => {
    // Proves no service can take another's requests or read another's replies.
    const payments = await as("payments");
    expect(await subscribes(payments, `${env.prefix}svc.ledger.post`)).toBe(false);
    expect(await subscribes(payments, `${env.prefix}svc.ledger.>`)).toBe(false);
    expect(await subscribes(payments, `${natsInboxPrefix("gateway")}.>`)).toBe(false);
    expect(await subscribes(payments, "_INBOX.>")).toBe(false);
    expect(await subscribes(payments, `${env.prefix}svc.payments.>`)).toBe(true);
    expect(await subscribes(payments, `${natsInboxPrefix("payments")}.abc.*`)).toBe(true);
  });

  it("lets a service answer only the identities allowed to call it", async () => {
    // Proves replies go only to callers' inboxes: kyc answers the gateway and payouts, never payments.
    const kyc = await as("kyc");
    expect(await publishes(kyc, `${natsInboxPrefix("payments")}.kyc.x.1`)).toEqual({ delivered: false, denied: true });
    expect(await publishes(kyc, `${natsInboxPrefix("payouts")}.kyc.x.1`)).toEqual({ delivered: true, denied: false });
    expect(await publishes(kyc, `${natsInboxPrefix("gateway")}.kyc.x.1`)).toEqual({ delivered: true, denied: false });
  });

  it("lets a callee answer only its own branch of a caller's inbox: kyc cannot answer payouts' ledger requests", async () => {
    // Proves a compromised kyc cannot forge the ledger's reply to payouts (a refused posting answered as a success).
    const kyc = await as("kyc");
    const ledger = await as("ledger");
    expect(await publishes(kyc, `${natsInboxPrefix("payouts")}.ledger.x.1`)).toEqual({ delivered: false, denied: true });
    expect(await publishes(kyc, `${natsInboxPrefix("payouts")}.x.1`)).toEqual({ delivered: false, denied: true });
    expect(await publishes(kyc, `${natsInboxPrefix("payouts")}.kyc.x.1`)).toEqual({ delivered: true, denied: false });
    expect(await publishes(ledger, `${natsInboxPrefix("payouts")}.ledger.x.1`)).toEqual({ delivered: true, denied: false });
    expect(await publishes(ledger, `${natsInboxPrefix("gateway")}.kyc.x.1`)).toEqual({ delivered: false, denied: true });
  });

  it("lets each service publish only the events it owns: kyc and the gateway cannot forge a checkout event", async () => {
    // Proves event ownership on the broker: evt.checkout.* from payments only, kyc's decisions from kyc only.
    const completed = `${env.prefix}evt.checkout.completed`;
    for (const identity of ["gateway", "kyc", "ledger", "refunds", "admin", "migrations"] as const) {
      expect(await publishes(await as(identity), completed), identity).toEqual({ delivered: false, denied: true });
    }
    const payments = await as("payments");
    const kyc = await as("kyc");
    expect(await publishes(payments, completed)).toEqual({ delivered: true, denied: false });
    expect(await publishes(kyc, `${env.prefix}evt.internal.kyc.approved`)).toEqual({ delivered: true, denied: false });
    expect(await publishes(payments, `${env.prefix}evt.internal.kyc.approved`)).toEqual({ delivered: false, denied: true });
    expect(await publishes(await as("payouts"), `${env.prefix}evt.payout.executed`)).toEqual({ delivered: true, denied: false });
    expect(await publishes(await as("gateway"), `${env.prefix}evt.payout.executed`)).toEqual({ delivered: false, denied: true });
  });

  it("lets only the migrations identity create or update the EVENTS stream; services read its info", async () => {
    // Proves no service (the internet-facing gateway included) can reconfigure the stream, and the migrate step can.
    const stream = eventsStreamName(env.prefix);
    for (const identity of SERVICES) {
      const probe = await as(identity);
      expect((await publishes(probe, `$JS.API.STREAM.UPDATE.${stream}`)).denied, identity).toBe(true);
      expect((await publishes(probe, `$JS.API.STREAM.CREATE.${stream}`)).denied, identity).toBe(true);
    }
    expect((await publishes(await as("payments"), `$JS.API.STREAM.INFO.${stream}`)).denied).toBe(false);

    const creds = env.natsCredentials("migrations");
    expect(creds).toBeDefined();
    const migrations = await connectNats({ url: parseNatsUrl(env.natsUrl).server, name: "migrations-probe", user: creds?.user, password: creds?.password });
    probes.push({ nc: migrations, denied: [] });
    const fresh = `${env.prefix}m.`;
    await ensureEventsStream(migrations, fresh);
    const info = await (await jetstreamManager(spy)).streams.info(eventsStreamName(fresh));
    expect(info.config.subjects).toEqual([`${fresh}evt.>`]);
  });

  it("lets only outbox relays publish events, and a service read the stream only through the consumers it owns", async () => {
    // Proves the EVENTS stream's subjects and JetStream API are as narrow as the matrix: the admin CLI publishes no
    // event, payments cannot create the webhooks' consumer or read messages, webhooks can create its own.
    const admin = await as("admin");
    const payments = await as("payments");
    const webhooks = await as("webhooks");
    const stream = eventsStreamName(env.prefix);
    expect(await publishes(admin, `${env.prefix}evt.sandbox.test`)).toEqual({ delivered: false, denied: true });
    expect(await publishes(payments, `${env.prefix}evt.sandbox.test`)).toEqual({ delivered: false, denied: true });
    expect(await publishes(webhooks, `${env.prefix}evt.sandbox.test`)).toEqual({ delivered: true, denied: false });
    expect(await publishes(payments, `$JS.API.CONSUMER.CREATE.${stream}.webhooks-fanout`)).toEqual({ delivered: false, denied: true });
    expect(await publishes(payments, `$JS.API.STREAM.MSG.GET.${stream}`)).toEqual({ delivered: false, denied: true });
    expect(await publishes(payments, `$JS.API.STREAM.DELETE.${stream}`)).toEqual({ delivered: false, denied: true });
    expect((await publishes(webhooks, `$JS.API.CONSUMER.INFO.${stream}.webhooks-fanout`)).denied).toBe(false);
    expect(await publishes(admin, rpcSubject(env.prefix, "payouts", "admin.payouts.settle"))).toEqual({ delivered: true, denied: false });
    expect(await publishes(admin, rpcSubject(env.prefix, "ledger", "admin.find.rows"))).toEqual({ delivered: true, denied: false });
    expect(await publishes(admin, rpcSubject(env.prefix, "payouts", "requestPayout"))).toEqual({ delivered: false, denied: true });
    // No service may send another's operator commands: they are the admin identity's and the console's alone.
    expect(await publishes(payments, rpcSubject(env.prefix, "ledger", "admin.ledger.verify"))).toEqual({ delivered: false, denied: true });
    // The operator console sends operator commands for its signed-in operators (ADR 0021), and nothing else.
    const operatorConsole = await as("console");
    expect(await publishes(operatorConsole, rpcSubject(env.prefix, "kyc", "admin.kyc.approve"))).toEqual({ delivered: true, denied: false });
    expect(await publishes(operatorConsole, rpcSubject(env.prefix, "kyc", "getCreatorStatus"))).toEqual({ delivered: false, denied: true });
    expect(await publishes(operatorConsole, `${env.prefix}evt.sandbox.test`)).toEqual({ delivered: false, denied: true });
  });
});
