/**
 * Shared setup of the kyc integration tests: this file's database and prefix (libs/testing), the service built
 * in-process with a PII key ring from its deps, RPC calls through NATS, and a stand-in answering the ledger's
 * `getParticipant` over real NATS for the participants a test declares (a service may not import another; the
 * end-to-end tests run the real ledger).
 */
import { randomBytes } from "node:crypto";
import { connect } from "@nats-io/transport-node";
import { DomainError, internalOperation, rpcSubject, type AuthContext, type RpcReply } from "@treasury/contracts";
import { createLogger, generateKeyRingEntry, parseKeyRing, rpcCall, RpcServer, type KeyRing } from "@treasury/service-kit";
import { setupTestEnv, type TestEnv, natsOptions, err, ok } from "@treasury/testing";
import { buildKyc, type KycService, type KycServiceDeps } from "./service.ts";

export { businessBody, creatorBody } from "../test/bodies.ts";

const RPC_TIMEOUT_TEST_MS = 20_000;

export function authFor(orgId: string, livemode = false): AuthContext {
  return { org_id: orgId, livemode, key_id: "key_test", scopes: null, request_id: `req_${randomBytes(16).toString("hex")}` };
}

export function newOrg(): string {
  return `org_${randomBytes(8).toString("hex")}`;
}

export function testKeyRing(...kids: string[]): { spec: string; ring: KeyRing } {
  const spec = (kids.length > 0 ? kids : ["t1"]).map((k) => generateKeyRingEntry(k)).join(",");
  return { spec, ring: parseKeyRing(spec, kids.at(-1)) };
}

export interface KycHarness {
  env: TestEnv;
  svc: KycService;
  /** Declares a participant the ledger stand-in knows, in the org and environment of `auth`. */
  addParticipant(auth: AuthContext, participantId: string): void;
  call(svc: KycService, op: string, auth: AuthContext, req?: { params?: Record<string, string>; body?: unknown }): Promise<RpcReply>;
  /** Builds and starts another instance of the service on the same database and prefix (closed with the harness). */
  another(env?: Record<string, string>, deps?: KycServiceDeps): Promise<KycService>;
  close(): Promise<void>;
}

/** `ring: null` starts the service without PII keys. */
export async function startKyc(opts: { ring?: KeyRing | null; env?: Record<string, string> } = {}): Promise<KycHarness> {
  const env = await setupTestEnv();
  const known = new Set<string>();
  // The kit's own RPC server, so the stand-in speaks the same wire (batched requests included) as the ledger.
  const ledgerNc = await connect(natsOptions(env.natsUrl));
  const ledger = new RpcServer({
    nc: ledgerNc,
    prefix: env.prefix,
    service: "ledger",
    log: createLogger({ service: "ledger-standin", level: "silent" }),
    concurrencyMax: 64,
  });
  ledger.handle(internalOperation("getParticipant"), async (req, ctx) => {
    const id = req.params["participant_id"] ?? "";
    if (!known.has(`${ctx.auth.org_id}|${String(ctx.auth.livemode)}|${id}`)) throw new DomainError("participant_not_found", `Participant ${id} not found`);
    return { body: { participant: { id } } };
  });
  ledger.start();
  await ledgerNc.flush();
  const started: KycService[] = [];
  const another = async (extra: Record<string, string> = {}, deps: KycServiceDeps = {}) => {
    const svc = await buildKyc(env.env("kyc", { KYC_LEDGER_TIMEOUT_MS: "2000", ...opts.env, ...extra }), deps);
    await svc.start();
    started.push(svc);
    return svc;
  };
  const ring = opts.ring === undefined ? testKeyRing().ring : opts.ring;
  const svc = await another({}, ring === null ? {} : { keyRing: ring });
  return {
    env,
    svc,
    addParticipant: (auth, participantId) => known.add(`${auth.org_id}|${String(auth.livemode)}|${participantId}`),
    // Through the stand-in's connection (the test superuser's): the service's own may not publish to its public
    // subjects (ADR 0011). One instance runs at a time, so the request reaches `_target`.
    call: (_target, op, auth, req = {}) =>
      rpcCall(
        ledgerNc,
        rpcSubject(env.prefix, "kyc", op),
        { auth, params: req.params ?? {}, query: {}, body: req.body ?? {} },
        { timeoutMs: RPC_TIMEOUT_TEST_MS },
      ),
    another,
    close: async () => {
      await Promise.all(started.map((s) => s.stop()));
      await ledger.drain();
      await ledgerNc.close();
      await env.cleanup();
    },
  };
}

export { err, ok };
