/**
 * The service's signing keys as the use cases need them: the active private key (opened from its sealed form
 * in memory only, never logged) and every public key by kid. Keys never change once made, so both are cached
 * by kid; which key is active is read from the database each time, so a rotation applies to the next proof.
 */
import { DomainError } from "@treasury/contracts";
import { SealedValueError, type Sealer } from "@treasury/service-kit";
import type { Logger } from "pino";
import { importPrivateKey, publicJwkOf, type PrivateSigningKey, type PublicJwk } from "../signing/jws.ts";
import type { KeyStore, PublicKeyRow, SigningKeys } from "./ports.ts";
import { ensureActiveKey, sealingContext } from "./rotate-key.ts";

export class Keyring implements SigningKeys {
  private readonly privateByKid = new Map<string, PrivateSigningKey>();
  private readonly publicByKid = new Map<string, PublicJwk>();

  constructor(
    private readonly keys: KeyStore,
    private readonly sealer: Sealer | undefined,
    private readonly log: Logger,
  ) {}

  /** Errors: service_unavailable (no sealing keys configured, or none of them opens the active signing key). */
  async signingKey(): Promise<{ kid: string; key: PrivateSigningKey }> {
    const sealer = this.sealer;
    if (sealer === undefined) {
      throw new DomainError("service_unavailable", "Receipt signing is not configured (RECEIPTS_SEALING_KEYS); existing proofs can still be read and verified");
    }
    const row = await ensureActiveKey(this.keys, sealer);
    const cached = this.privateByKid.get(row.kid);
    if (cached !== undefined) return { kid: row.kid, key: cached };
    let pkcs8: string;
    try {
      pkcs8 = sealer.open(row.sealed_private_key, sealingContext(row.kid));
    } catch (e) {
      if (!(e instanceof SealedValueError)) throw e;
      // The kit's messages name key ids, never key material.
      this.log.error({ kid: row.kid, reason: e.message }, "the active signing key cannot be opened with the configured sealing keys");
      throw new DomainError("service_unavailable", "Receipt signing key cannot be opened with the configured sealing keys");
    }
    const key = await importPrivateKey(pkcs8);
    this.privateByKid.set(row.kid, key);
    return { kid: row.kid, key };
  }

  /** The public key of `kid`, or undefined for a kid this service never had. */
  async publicKey(kid: string): Promise<PublicJwk | undefined> {
    const cached = this.publicByKid.get(kid);
    if (cached !== undefined) return cached;
    const row = await this.keys.findPublic(kid);
    return row === undefined ? undefined : this.remember(row);
  }

  async allPublicKeys(): Promise<Array<{ kid: string; alg: string; jwk: PublicJwk }>> {
    const rows = await this.keys.listPublic();
    return rows.map((r) => ({ kid: r.kid, alg: r.alg, jwk: this.remember(r) }));
  }

  private remember(row: PublicKeyRow): PublicJwk {
    const parsed = publicJwkOf(row.public_jwk);
    if (parsed === undefined) throw new Error(`signing key ${row.kid} has a malformed public JWK`);
    this.publicByKid.set(row.kid, parsed.jwk);
    return parsed.jwk;
  }
}
