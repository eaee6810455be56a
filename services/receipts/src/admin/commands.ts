/**
 * The receipts service's operator commands (ADR 0016): rotating its signing key, and auditing every proof chain
 * in full. Both run in the use cases' own transactions, so each audit row follows the outcome.
 */
import { DomainError } from "@treasury/contracts";
import type { AdminCommand, Sealer, Service } from "@treasury/service-kit";
import { auditChains, type AuditReport } from "../usecases/audit-chains.ts";
import type { KeyStore, ReceiptsDeps } from "../usecases/ports.ts";
import { rotateSigningKey } from "../usecases/rotate-key.ts";
import type { Walker } from "../usecases/walk-chain.ts";

export interface AdminDeps extends Walker, Pick<ReceiptsDeps, "now"> {
  keys: KeyStore;
  /** The service's sealing keys (RECEIPTS_SEALING_KEYS): a new private key is sealed with the active one before it is stored. */
  sealer: Sealer | undefined;
}

/** Neither command takes flags beyond the reason every command has. */
const noFlags = (): undefined => undefined;

function rotateKey(deps: AdminDeps): AdminCommand<undefined> {
  return {
    decode: noFlags,
    audit: {
      atomic: false,
      target: (_seen, result) => {
        const r = result as { kid?: string; retired_kids?: string[] } | undefined;
        return {
          targetIds: [r?.kid, ...(r?.retired_kids ?? [])],
          details: r === undefined ? {} : { kid: r.kid, retired_kids: r.retired_kids },
        };
      },
    },
    run: async () => {
      if (deps.sealer === undefined) {
        throw new DomainError(
          "service_unavailable",
          "Receipt signing is not configured (RECEIPTS_SEALING_KEYS): there is no sealing key to seal a new signing key with",
        );
      }
      return rotateSigningKey(deps.keys, deps.sealer);
    },
  };
}

function auditAll(deps: AdminDeps): AdminCommand<undefined> {
  return {
    decode: noFlags,
    audit: {
      // What it records (receipts.chain_audits) is the finding itself; the row says who ran it.
      atomic: false,
      target: (_seen, result) => {
        const r = result as Partial<AuditReport> | undefined;
        return { targetIds: (r?.broken ?? []).map((b) => b.org_id), details: r === undefined ? {} : { chains: r.chains, broken: r.broken?.length } };
      },
    },
    // Every chain from its first link, even one another replica audited a moment ago: the operator asked now.
    run: async (call) => ({ ...(await auditChains(deps, call.log)) }),
  };
}

export function registerAdminCommands(svc: Pick<Service, "handleAdmin">, deps: AdminDeps): void {
  svc.handleAdmin("receipts rotate-key", rotateKey(deps));
  svc.handleAdmin("receipts audit-chains", auditAll(deps));
}
