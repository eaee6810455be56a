/**
 * The receipts service: receipts of sales, the hosted receipt page, signed ledger proofs in a hash chain per
 * org and environment, counterparty signatures, verification and the public JWKS. It reads the ledger's record
 * of a transaction and a checkout's sale over NATS; it never moves money.
 */
import { createService, type Sealer, type Service, type ServiceConfig, type ServiceDeps } from "@treasury/service-kit";
import { natsReads } from "./adapters/reads.ts";
import { ReceiptsEnv } from "./config.ts";
import { registerHandlers } from "./handlers/index.ts";
import { sealerOf } from "./signing/sealer.ts";
import type { ReceiptsDeps } from "./usecases/deps.ts";
import { ChainAuditJob } from "./audit-job.ts";
import { Keyring } from "./usecases/keyring.ts";

export type ReceiptsService = Service<ServiceConfig<typeof ReceiptsEnv>> & { deps: ReceiptsDeps; chainAudit: ChainAuditJob };

export async function buildReceipts(env: Record<string, string | undefined>, deps: ServiceDeps = {}): Promise<ReceiptsService> {
  const svc = await createService({ name: "receipts", env, extraEnv: ReceiptsEnv, deps });
  const cfg = svc.config;
  let sealer: Sealer | undefined;
  try {
    sealer = sealerOf(cfg.RECEIPTS_SEALING_KEYS, cfg.RECEIPTS_SEALING_ACTIVE_KEY_ID);
  } catch (e) {
    await svc.stop();
    throw e;
  }
  if (sealer === undefined) svc.log.warn("RECEIPTS_SEALING_KEYS is not set: new proofs cannot be signed until it is");
  const useCaseDeps: ReceiptsDeps = {
    sql: svc.sql,
    reads: natsReads(svc.nc, svc.prefix, cfg.RECEIPTS_RPC_TIMEOUT_MS),
    keyring: new Keyring(svc.sql, sealer, svc.log),
    checkpointEvery: cfg.RECEIPTS_CHAIN_CHECKPOINT_EVERY,
  };
  registerHandlers(svc, useCaseDeps);
  const audit = new ChainAuditJob(useCaseDeps, svc.metrics, svc.log, cfg.RECEIPTS_CHAIN_AUDIT_INTERVAL_MS);
  const start = svc.start.bind(svc);
  svc.onShutdown(() => audit.stop());
  return Object.assign(svc, {
    deps: useCaseDeps,
    chainAudit: audit,
    start: async () => {
      const res = await start();
      await audit.start();
      return res;
    },
  });
}
