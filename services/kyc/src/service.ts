/**
 * The kyc service: business (KYB) and creator (KYC) intake, the verifications operators review (the admin
 * CLI's `kyc` commands, answered here: admin/commands.ts), the creator status payout eligibility reads, and the
 * rotation of the keys that seal personal data. Events, the operators' decisions included, leave through this
 * service's outbox relay.
 */
import { createService, natsLedgerPort, piiKeyRing, Sealer, type KeyRing, type Service, type ServiceConfig, type ServiceDeps } from "@treasury/service-kit";
import { ledgerParticipants } from "./adapters/ledger.ts";
import { registerAdminCommands } from "./admin/commands.ts";
import { pgKycFinder } from "./admin/find.ts";
import { KycEnv } from "./config.ts";
import { registerHandlers } from "./handlers/index.ts";
import { registerReseal } from "./jobs/reseal.ts";
import { pgKycStore } from "./store/verifications.ts";
import type { KycDeps, ParticipantDirectory } from "./usecases/ports.ts";

/** What a test (or host process) may supply instead of configuration. */
export interface KycServiceDeps extends ServiceDeps {
  /** The PII key ring; otherwise PII_KEYS / PII_ACTIVE_KEY_ID. */
  keyRing?: KeyRing;
  participants?: ParticipantDirectory;
  now?: () => Date;
}

export type KycService = Service<ServiceConfig<typeof KycEnv>> & { deps: KycDeps; keyIds: readonly string[]; reseal(): Promise<number> };

export async function buildKyc(env: Record<string, string | undefined>, deps: KycServiceDeps = {}): Promise<KycService> {
  const svc = await createService({ name: "kyc", env, extraEnv: KycEnv, deps });
  const cfg = svc.config;
  let ring: KeyRing | undefined;
  try {
    ring = deps.keyRing ?? piiKeyRing(cfg);
  } catch (e) {
    await svc.stop();
    throw e;
  }
  const ledger = natsLedgerPort(svc.nc, svc.prefix, { caller: "kyc", timeoutMs: cfg.KYC_LEDGER_TIMEOUT_MS });
  const useCaseDeps: KycDeps = {
    store: pgKycStore(svc.sql),
    sealer: ring === undefined ? undefined : new Sealer(ring),
    participants: deps.participants ?? ledgerParticipants(ledger),
    now: deps.now ?? (() => new Date()),
  };
  if (ring === undefined) {
    svc.log.warn("PII_KEYS is not set: KYC submissions are refused until encryption keys are configured");
    svc.readyChecks.push(async () => {
      throw new Error("PII_KEYS is not configured");
    });
  }
  registerHandlers(svc, useCaseDeps);
  registerAdminCommands(svc, useCaseDeps);
  svc.adminFind(pgKycFinder(svc.sql));
  const keyIds = ring === undefined ? [] : [...ring.keys.keys()];
  const reseal = registerReseal(svc, useCaseDeps, keyIds);
  return Object.assign(svc, { deps: useCaseDeps, keyIds, reseal: async () => (await reseal.runOnce()) ?? 0 });
}
