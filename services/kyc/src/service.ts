/**
 * The kyc service: business (KYB) and creator (KYC) intake, the verifications operators review (their
 * decisions come through the admin CLI: usecases/review.ts), the creator status payout eligibility reads, and
 * the rotation of the keys that seal personal data. Events, the CLI's included, leave through this service's
 * outbox relay.
 */
import {
  ConfigError,
  createService,
  parseKeyRing,
  Sealer,
  SealedValueError,
  type KeyRing,
  type Service,
  type ServiceConfig,
  type ServiceDeps,
} from "@treasury/service-kit";
import { natsParticipants, type ParticipantDirectory } from "./adapters/ledger.ts";
import { KycEnv } from "./config.ts";
import { registerHandlers } from "./handlers/index.ts";
import type { KycDeps } from "./usecases/deps.ts";
import { resealBatch } from "./usecases/reseal.ts";

/** What a test (or host process) may supply instead of configuration. */
export interface KycServiceDeps extends ServiceDeps {
  /** The PII key ring; otherwise PII_KEYS / PII_ACTIVE_KEY_ID. */
  keyRing?: KeyRing;
  participants?: ParticipantDirectory;
  now?: () => Date;
}

export type KycService = Service<ServiceConfig<typeof KycEnv>> & { deps: KycDeps; keyIds: readonly string[]; reseal(): Promise<number> };

function keyRingOf(cfg: ServiceConfig<typeof KycEnv>): KeyRing | undefined {
  if (cfg.PII_KEYS === undefined) return undefined;
  try {
    return parseKeyRing(cfg.PII_KEYS, cfg.PII_ACTIVE_KEY_ID);
  } catch (e) {
    // The ring's messages name entries and key ids, never key material.
    if (e instanceof SealedValueError) throw new ConfigError([`PII_KEYS: ${e.message}`]);
    throw e;
  }
}

export async function buildKyc(env: Record<string, string | undefined>, deps: KycServiceDeps = {}): Promise<KycService> {
  const svc = await createService({ name: "kyc", env, extraEnv: KycEnv, deps });
  const cfg = svc.config;
  let ring: KeyRing | undefined;
  try {
    ring = deps.keyRing ?? keyRingOf(cfg);
  } catch (e) {
    await svc.stop();
    throw e;
  }
  const useCaseDeps: KycDeps = {
    sql: svc.sql,
    sealer: ring === undefined ? undefined : new Sealer(ring),
    participants: deps.participants ?? natsParticipants(svc.nc, svc.prefix, cfg.KYC_LEDGER_TIMEOUT_MS),
    now: deps.now ?? (() => new Date()),
  };
  if (ring === undefined) {
    svc.log.warn("PII_KEYS is not set: KYC submissions are refused until encryption keys are configured");
    svc.readyChecks.push(async () => {
      throw new Error("PII_KEYS is not configured");
    });
  }
  registerHandlers(svc, useCaseDeps);
  const keyIds = ring === undefined ? [] : [...ring.keys.keys()];
  const reseal = async (): Promise<number> => {
    const sealer = useCaseDeps.sealer;
    if (sealer === undefined) return 0;
    let moved = 0;
    for (;;) {
      const n = await resealBatch({ ...useCaseDeps, sealer }, keyIds, cfg.KYC_RESEAL_BATCH_MAX);
      moved += n;
      if (n < cfg.KYC_RESEAL_BATCH_MAX) return moved;
    }
  };
  let timer: NodeJS.Timeout | undefined;
  svc.onShutdown(async () => clearInterval(timer));
  const start = svc.start.bind(svc);
  return Object.assign(svc, {
    deps: useCaseDeps,
    keyIds,
    reseal,
    start: async () => {
      const res = await start();
      timer = startResealLoop(svc, reseal, cfg.KYC_RESEAL_INTERVAL_MS, keyIds.length > 1);
      return res;
    },
  });
}

/** With retired keys in the ring, moves their rows to the active key now and then (never with one key). */
function startResealLoop(svc: Service, reseal: () => Promise<number>, intervalMs: number, enabled: boolean): NodeJS.Timeout | undefined {
  if (!enabled || intervalMs === 0) return undefined;
  let running = false;
  const tick = (): void => {
    if (running) return;
    running = true;
    reseal()
      .then((n) => {
        if (n > 0) svc.log.info({ resealed: n }, "personal data re-sealed with the active key");
      })
      .catch((err: unknown) => svc.log.error({ err }, "re-sealing personal data failed; retried on the next pass"))
      .finally(() => {
        running = false;
      });
  };
  const timer = setInterval(tick, intervalMs);
  timer.unref();
  return timer;
}
