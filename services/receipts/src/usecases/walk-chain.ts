/**
 * Walking one org and environment's proof chain. A verification starts at the newest checkpoint whose service
 * signature verifies (or at the first link when there is none) and checks every link after it up to the head
 * read when it started (links a concurrent proof adds meanwhile are the next walk's); a walk that found the chain
 * whole and went `checkpointEvery` links or more past its start records a signed checkpoint at its end, so a
 * verification reads a bounded number of links however long the chain grows. A full walk (the audit,
 * usecases/audit-chains.ts) ignores checkpoints and reads every link from the first.
 */
import { DomainError, type Tenant } from "@treasury/contracts";
import { checkpointSigningPayload, serviceSigningPayload } from "../domain/canonical.ts";
import { ChainWalk } from "../domain/chain.ts";
import { headerOf, SERVICE_ALG, signCompact, verifiesOver } from "../signing/jws.ts";
import type { CheckpointRow, ProofRow, ReceiptsDeps, SigningKeys } from "./ports.ts";

export type Walker = Pick<ReceiptsDeps, "proofs" | "chains" | "keyring" | "checkpointEvery">;

/** Links read per query while walking a chain. */
const CHAIN_PAGE_ROWS = 500;

/** True when `jws` is the service's signature, by the key its header names, over this proof's chain link. */
export async function serviceSignatureValid(keyring: SigningKeys, proof: ProofRow, jws: string): Promise<boolean> {
  const header = headerOf(jws);
  if (header?.kid === undefined || header.alg !== SERVICE_ALG) return false;
  const jwk = await keyring.publicKey(header.kid);
  if (jwk === undefined) return false;
  return verifiesOver(jws, { jwk, alg: "EdDSA" }, serviceSigningPayload(proof));
}

async function checkpointValid(deps: Walker, tenant: Tenant, c: CheckpointRow): Promise<boolean> {
  const header = headerOf(c.signature_jws);
  if (header?.kid !== c.signature_kid || header.alg !== SERVICE_ALG) return false;
  const jwk = await deps.keyring.publicKey(c.signature_kid);
  if (jwk === undefined) return false;
  return verifiesOver(c.signature_jws, { jwk, alg: "EdDSA" }, checkpointSigningPayload({ org_id: tenant.orgId, livemode: tenant.livemode, ...c }));
}

/** Signs and records a checkpoint at `at`; without a signing key (no sealing keys configured) there is none. */
async function recordCheckpoint(deps: Walker, tenant: Tenant, at: { sequence: number; entry_hash: string }): Promise<void> {
  let signer;
  try {
    signer = await deps.keyring.signingKey();
  } catch (e) {
    if (e instanceof DomainError && e.code === "service_unavailable") return;
    throw e;
  }
  const jws = await signCompact(signer.key, signer.kid, checkpointSigningPayload({ org_id: tenant.orgId, livemode: tenant.livemode, ...at }));
  await deps.chains.insertCheckpoint(tenant, { ...at, signature_kid: signer.kid, signature_jws: jws });
}

/** Every problem the walk found (none when the chain is whole) and the last sequence it covered. */
export async function walkChain(deps: Walker, tenant: Tenant, opts: { full: boolean }): Promise<{ problems: string[]; through: number }> {
  const problems: string[] = [];
  let start: CheckpointRow | undefined;
  if (!opts.full) {
    const newest = await deps.chains.newestCheckpoint(tenant);
    if (newest !== undefined && (await checkpointValid(deps, tenant, newest))) start = newest;
    else if (newest !== undefined) problems.push(`checkpoint at sequence ${newest.sequence}: service signature does not verify`);
  }
  const head = await deps.proofs.head(tenant);
  const walk = new ChainWalk(start);
  const through = head?.last_sequence ?? 0;
  for (let after = walk.last.sequence; after < through; ) {
    const page = await deps.proofs.page(tenant, after, through, CHAIN_PAGE_ROWS);
    for (const link of page) {
      walk.add(link);
      if (!(await serviceSignatureValid(deps.keyring, link, link.signature_jws)))
        walk.problems.push(`sequence ${link.sequence}: service signature does not verify`);
    }
    const last = page.at(-1);
    if (last === undefined || page.length < CHAIN_PAGE_ROWS) break;
    after = last.sequence;
  }
  walk.finish(head);
  problems.push(...walk.problems);
  if (!opts.full && problems.length === 0 && walk.last.sequence - (start?.sequence ?? 0) >= deps.checkpointEvery) {
    await recordCheckpoint(deps, tenant, walk.last);
  }
  return { problems, through: walk.last.sequence };
}
