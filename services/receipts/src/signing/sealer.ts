/** The kit's sealer over the configured key ring, which keeps the service's private signing keys sealed at rest. */
import { ConfigError, parseKeyRing, SealedValueError, Sealer } from "@treasury/service-kit";

/** The sealer of RECEIPTS_SEALING_KEYS; undefined when none are configured; a ConfigError when malformed. */
export function sealerOf(keys: string | undefined, activeKeyId: string | undefined): Sealer | undefined {
  if (keys === undefined) return undefined;
  try {
    return new Sealer(parseKeyRing(keys, activeKeyId));
  } catch (e) {
    // The ring's messages name entries and key ids, never key material.
    if (e instanceof SealedValueError) throw new ConfigError([`RECEIPTS_SEALING_KEYS: ${e.message}`]);
    throw e;
  }
}
