/**
 * Endpoint signing secrets at rest: sealed with the service's key ring (the kit's Sealer, WEBHOOK_SECRET_KEYS),
 * each bound to its endpoint and column, so a sealed value copied to another endpoint, or from `previous` to
 * current, does not open. Rows written before sealing may still hold clear secrets until the reseal pass
 * (reseal.ts) seals them; reading accepts both meanwhile. Secrets are never logged; errors carry no secret.
 */
import { DomainError } from "@treasury/contracts";
import type { Sealer } from "@treasury/service-kit";
import type { EndpointSecrets, SealedSecrets } from "../domain/records.ts";
import type { AttemptSigners, SignatureScheme } from "../domain/signing.ts";
import type { SigningKeys } from "./signing-keys.ts";

export function secretAad(endpointId: string): string {
  return `webhooks.endpoints.secret:${endpointId}`;
}

export function previousSecretAad(endpointId: string): string {
  return `webhooks.endpoints.previous_secret:${endpointId}`;
}

/** The sealer, or 503 service_unavailable when no keys are configured. */
export function requireSealer(sealer: Sealer | undefined): Sealer {
  if (sealer === undefined) {
    throw new DomainError("service_unavailable", "Webhook secrets cannot be stored or read: encryption keys are not configured", {
      hint: "Set WEBHOOK_SECRET_KEYS for the webhooks service",
    });
  }
  return sealer;
}

/** Seals an endpoint's current secret (and the previous one, during a rotation's overlap) with the active key. */
export function sealSecrets(sealer: Sealer, endpointId: string, current: string, previous: string | null): SealedSecrets {
  return {
    secret_sealed: sealer.seal(current, secretAad(endpointId)),
    previous_secret_sealed: previous === null ? null : sealer.seal(previous, previousSecretAad(endpointId)),
    secret_key_id: sealer.activeKeyId,
  };
}

/** The endpoint's current and previous secrets in clear (throws SealedValueError when a key is missing). */
export function openSecrets(sealer: Sealer, e: EndpointSecrets): { current: string; previous: string | null } {
  if (e.secret !== null) {
    // A clear current secret beside a sealed one means a replica of the previous release rotated the sealed row:
    // it wrote the new secret clear and found no clear one to keep as previous, so the sealed one is the previous.
    const previous = e.previous_secret ?? (e.secret_sealed === null ? null : sealer.open(e.secret_sealed, secretAad(e.id)));
    return { current: e.secret, previous };
  }
  if (e.secret_sealed === null) throw new Error(`endpoint ${e.id} has no secret`);
  const current = sealer.open(e.secret_sealed, secretAad(e.id));
  const previous = e.previous_secret ?? (e.previous_secret_sealed === null ? null : sealer.open(e.previous_secret_sealed, previousSecretAad(e.id)));
  return { current, previous };
}

/** The secrets that sign now: the current one, and the previous one while its overlap lasts. */
export function signingSecrets(sealer: Sealer, e: EndpointSecrets, now: Date): string[] {
  const { current, previous } = openSecrets(sealer, e);
  const overlapping = previous !== null && e.previous_secret_expires_at !== null && e.previous_secret_expires_at > now;
  return overlapping ? [current, previous] : [current];
}

/**
 * What signs an attempt to this endpoint now: its secrets (`hmac_sha256`), or the platform's Ed25519 keys
 * (`ed25519`). Throws SealedValueError when a secret cannot be opened, service_unavailable when no key can sign.
 */
export async function attemptSigners(
  sealer: Sealer,
  keys: Pick<SigningKeys, "signers">,
  e: EndpointSecrets & { signature_scheme: SignatureScheme },
  now: Date,
): Promise<AttemptSigners> {
  if (e.signature_scheme === "ed25519") return { scheme: "ed25519", keys: await keys.signers() };
  return { scheme: "hmac_sha256", secrets: signingSecrets(sealer, e, now) };
}
