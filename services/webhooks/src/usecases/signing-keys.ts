/**
 * The platform's Ed25519 keys that sign `ed25519` endpoints' deliveries (Standard Webhooks `v1a`), and their
 * publication as a JWKS. One key is active; a rotation (`admin webhooks rotate-signing-key`) makes a new one
 * active and keeps the previous one signing beside it and published for the overlap, so a receiver holding a
 * cached key set still verifies, and one that fetched the new set verifies too. Private halves are sealed with the
 * service's key ring (WEBHOOK_SECRET_KEYS), bound to their kid, as endpoint secrets are; they are opened in memory
 * only, never logged.
 */
import { createPrivateKey, generateKeyPairSync, type KeyObject } from "node:crypto";
import { DomainError } from "@treasury/contracts";
import { SealedValueError, type Sealer } from "@treasury/service-kit";
import type { Logger } from "pino";
import { jwksEntry, publicJwkOf, thumbprint, type JwksEntry } from "../domain/jwk.ts";
import type { Ed25519Signer } from "../domain/signing.ts";
import type { NewSigningKey, SigningKeyRow, SigningKeyStore, SigningKeyTx } from "./ports.ts";
import { requireSealer } from "./secrets.ts";

/** How long the set of signing keys is kept in memory: another replica's rotation reaches this one within it. */
export const SIGNING_KEYS_REFRESH_MS = 5_000;

/** Binds a sealed private key to its row: copied onto another key's row, it does not open. */
export function sealingContext(kid: string): string {
  return `webhooks.signing_keys:${kid}`;
}

/** A fresh key pair (node:crypto), its private half (PKCS#8 DER, base64) sealed with the ring's active key. */
export function newSigningKey(sealer: Sealer): NewSigningKey {
  const { publicKey, privateKey } = generateKeyPairSync("ed25519");
  const publicJwk = publicJwkOf(publicKey.export({ format: "jwk" }));
  const kid = thumbprint(publicJwk);
  const der = privateKey.export({ format: "der", type: "pkcs8" }).toString("base64");
  return { kid, publicJwk, sealed: sealer.seal(der, sealingContext(kid)), sealingKeyId: sealer.activeKeyId };
}

/** The active key, made under the lock when there is none yet (the first start, or the first signature). */
export async function ensureActiveKey(store: Pick<SigningKeyStore, "transaction">, sealer: Sealer): Promise<SigningKeyRow> {
  return store.transaction(async (tx) => {
    await tx.lock();
    return (await tx.active()) ?? (await tx.insertActive(newSigningKey(sealer)));
  });
}

export interface RotationResult {
  kid: string;
  created_at: string;
  /** Keys still signing beside it and published, with when they stop. */
  previous: Array<{ kid: string; expires_at: string }>;
  overlap_seconds: number;
}

/**
 * A new active key; the previous ones stay published (and sign beside it) for `overlapMs`, then drop out. Runs in
 * the caller's transaction (the operator command's, with its audit row). Codes: service_unavailable (no keys).
 */
export async function rotateSigningKey(tx: SigningKeyTx, sealer: Sealer | undefined, overlapMs: number): Promise<RotationResult> {
  const ring = requireSealer(sealer);
  await tx.lock();
  const previous = await tx.retireActive(overlapMs);
  const row = await tx.insertActive(newSigningKey(ring));
  return {
    kid: row.kid,
    created_at: row.created_at.toISOString(),
    previous: previous.map((p) => ({ kid: p.kid, expires_at: p.expires_at.toISOString() })),
    overlap_seconds: Math.round(overlapMs / 1000),
  };
}

/** Moves keys sealed with a retired ring key to the active one; a key the ring cannot open is left (and logged). */
export async function resealSigningKeys(store: SigningKeyStore, sealer: Sealer, ringKeyIds: readonly string[], batchMax: number, log: Logger): Promise<number> {
  const retired = ringKeyIds.filter((k) => k !== sealer.activeKeyId);
  if (retired.length === 0) return 0;
  let moved = 0;
  for (;;) {
    const n = await store.reseal(retired, batchMax, (row) => {
      try {
        const der = sealer.open(row.sealed_private_key ?? "", sealingContext(row.kid));
        return { sealed: sealer.seal(der, sealingContext(row.kid)), sealingKeyId: sealer.activeKeyId };
      } catch (err) {
        if (!(err instanceof SealedValueError)) throw err;
        log.error({ kid: row.kid, error: err.message }, "webhook signing key could not be opened for resealing");
        return undefined;
      }
    });
    moved += n;
    if (n < batchMax) return moved;
  }
}

/**
 * The keys as signing and the JWKS need them. The set of current keys is read at most every
 * SIGNING_KEYS_REFRESH_MS (a rotation here refreshes it at once); opened private keys are kept by kid, since a
 * kid's key never changes.
 */
export class SigningKeys {
  private readonly opened = new Map<string, KeyObject>();
  private cached: { at: number; rows: Promise<SigningKeyRow[]> } | undefined;

  constructor(
    private readonly store: SigningKeyStore,
    private readonly sealer: Sealer | undefined,
    private readonly log: Logger,
    private readonly clock: () => number = Date.now,
  ) {}

  /** Forget the cached set: the next signature or JWKS reads the keys again. */
  invalidate(): void {
    this.cached = undefined;
  }

  private rows(): Promise<SigningKeyRow[]> {
    const now = this.clock();
    if (this.cached === undefined || now - this.cached.at >= SIGNING_KEYS_REFRESH_MS) {
      const rows = this.store.current();
      // A failed read is not kept: the next caller asks again.
      rows.catch(() => (this.cached = undefined));
      this.cached = { at: now, rows };
    }
    return this.cached.rows;
  }

  /** The published key set (RFC 7517), active key first. */
  async jwks(): Promise<{ keys: JwksEntry[] }> {
    const rows = await this.rows();
    return { keys: rows.map((r) => jwksEntry(r.kid, publicJwkOf(r.public_jwk))) };
  }

  /**
   * What signs an `ed25519` delivery now: the active key, then the keys in their overlap. The first key is made
   * when there is none. Codes: service_unavailable (no ring, or no key the ring can open).
   */
  async signers(): Promise<Ed25519Signer[]> {
    const sealer = requireSealer(this.sealer);
    let rows = await this.rows();
    if (!rows.some((r) => r.status === "active")) {
      await ensureActiveKey(this.store, sealer);
      this.invalidate();
      rows = await this.rows();
    }
    const signers: Ed25519Signer[] = [];
    for (const row of rows) {
      const key = this.open(sealer, row);
      if (key !== undefined) signers.push({ kid: row.kid, privateKey: key });
    }
    if (signers.length === 0) throw new DomainError("service_unavailable", "No webhook signing key can be opened with the configured keys");
    return signers;
  }

  private open(sealer: Sealer, row: SigningKeyRow): KeyObject | undefined {
    const cached = this.opened.get(row.kid);
    if (cached !== undefined) return cached;
    if (row.sealed_private_key === null) return undefined;
    try {
      const der = Buffer.from(sealer.open(row.sealed_private_key, sealingContext(row.kid)), "base64");
      const key = createPrivateKey({ key: der, format: "der", type: "pkcs8" });
      this.opened.set(row.kid, key);
      return key;
    } catch (err) {
      if (!(err instanceof SealedValueError)) throw err;
      // The ring's messages name key ids, never key material.
      this.log.error({ kid: row.kid, error: err.message }, "webhook signing key cannot be opened with the configured keys");
      return undefined;
    }
  }
}
