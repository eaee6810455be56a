/**
 * The receipts service: receipts of sales, the hosted receipt page, signed ledger proofs in a hash chain per
 * org and environment, counterparty signatures, verification and the public JWKS. It reads the ledger's record
 * of a transaction and a checkout's sale over NATS; it never moves money.
 */
import { createService, type Job, type Sealer, type Service, type ServiceConfig, type ServiceDeps } from "@treasury/service-kit";
import { natsReads } from "./adapters/reads.ts";
import { registerAdminCommands } from "./admin/commands.ts";
import { pgFinder } from "./admin/find.ts";
import { ReceiptsEnv } from "./config.ts";
import { registerHandlers } from "./handlers/index.ts";
import { registerChainAudit } from "./jobs/chain-audit.ts";
import { sealerOf } from "./signing/sealer.ts";
import { pgChainStore } from "./store/checkpoints.ts";
import { pgKeyStore } from "./store/keys.ts";
import { pgProofStore } from "./store/proofs.ts";
import { pgReceiptStore } from "./store/receipts.ts";
import type { AuditReport } from "./usecases/audit-chains.ts";
import { Keyring } from "./usecases/keyring.ts";
import type { ReceiptsDeps } from "./usecases/ports.ts";

export type ReceiptsService = Service<ServiceConfig<typeof ReceiptsEnv>> & { deps: ReceiptsDeps; chainAudit: Job<AuditReport> };

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
    receipts: pgReceiptStore(svc.sql),
    proofs: pgProofStore(svc.sql),
    chains: pgChainStore(svc.sql),
    reads: natsReads(svc.nc, svc.prefix, cfg.RECEIPTS_RPC_TIMEOUT_MS),
    keyring: new Keyring(pgKeyStore(svc.sql), sealer, svc.log),
    checkpointEvery: cfg.RECEIPTS_CHAIN_CHECKPOINT_EVERY,
    now: () => new Date(),
  };
  registerHandlers(svc, useCaseDeps);
  registerAdminCommands(svc, { ...useCaseDeps, keys: pgKeyStore(svc.sql), sealer });
  svc.adminFind(pgFinder(svc.sql));
  const chainAudit = registerChainAudit(svc, useCaseDeps, cfg.RECEIPTS_CHAIN_AUDIT_INTERVAL_MS);
  return Object.assign(svc, { deps: useCaseDeps, chainAudit });
}
