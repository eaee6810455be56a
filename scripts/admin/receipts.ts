/** The receipts service's signing key. */
import { sealerOf } from "../../services/receipts/src/signing/sealer.ts";
import { pino } from "pino";
import { pgChainStore } from "../../services/receipts/src/store/checkpoints.ts";
import { pgKeyStore } from "../../services/receipts/src/store/keys.ts";
import { pgProofStore } from "../../services/receipts/src/store/proofs.ts";
import { auditChains } from "../../services/receipts/src/usecases/audit-chains.ts";
import { Keyring } from "../../services/receipts/src/usecases/keyring.ts";
import { rotateSigningKey } from "../../services/receipts/src/usecases/rotate-key.ts";
import type { Commands } from "./command.ts";

export const receiptsCommands: Commands = {
  "receipts rotate-key": {
    usage: "receipts rotate-key [--reason TEXT]   → {kid, alg, retired_kids, created_at}; needs RECEIPTS_SEALING_KEYS",
    audit: {
      // The rotation runs in the receipts use case's own transaction; its row follows the outcome.
      action: "receipts.rotate-key",
      atomic: false,
      target: (_ctx, _q, result) => {
        const r = result as { kid?: string; retired_kids?: string[] } | undefined;
        return {
          targetIds: [...(r?.kid === undefined ? [] : [r.kid]), ...(r?.retired_kids ?? [])],
          details: r === undefined ? {} : { kid: r.kid, retired_kids: r.retired_kids },
        };
      },
    },
    async run(ctx) {
      // The receipts service's sealing keys: the new private key is sealed with the active one before it is stored.
      const sealer = sealerOf(process.env.RECEIPTS_SEALING_KEYS || undefined, process.env.RECEIPTS_SEALING_ACTIVE_KEY_ID || undefined);
      if (sealer === undefined) throw new Error("set RECEIPTS_SEALING_KEYS (and RECEIPTS_SEALING_ACTIVE_KEY_ID) as the receipts service has them");
      return rotateSigningKey(pgKeyStore(ctx.sql), sealer);
    },
  },
  "receipts audit-chains": {
    usage: "receipts audit-chains   → {chains, broken}; walks every receipt proof chain from its first link, records what it finds; exits 1 when one is broken",
    audit: {
      // What it records (receipts.chain_audits) is the finding itself; the row says who ran it.
      action: "receipts.audit-chains",
      atomic: false,
      target: (_ctx, _q, result) => {
        const r = result as { chains?: number; broken?: Array<{ org_id: string }> } | undefined;
        return { targetIds: (r?.broken ?? []).map((b) => b.org_id), details: r === undefined ? {} : { chains: r.chains, broken: r.broken?.length } };
      },
    },
    async run(ctx) {
      const log = pino({ level: "silent" });
      // Public keys only: an audit verifies signatures and signs nothing.
      const report = await auditChains(
        {
          proofs: pgProofStore(ctx.sql),
          chains: pgChainStore(ctx.sql),
          keyring: new Keyring(pgKeyStore(ctx.sql), undefined, log),
          checkpointEvery: Number.MAX_SAFE_INTEGER,
          now: () => new Date(),
        },
        log,
      );
      if (report.broken.length > 0) process.exitCode = 1;
      return report;
    },
  },
};
