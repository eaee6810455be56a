// Proves the signing key rules on fakes: the first key is made on first use, sealed; a rotation makes a new active
// key that signs and is listed first while the previous one stays for the overlap; overlap 0 drops every previous
// key; an overlap never lengthens an earlier key's end; without a ring nothing signs (503); the reseal pass moves
// private keys to the ring's active key and they still open.
import { generateKeyRingEntry, parseKeyRing, Sealer } from "@treasury/service-kit";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { fakeDeps } from "./fakes.ts";
import { resealSigningKeys, rotateSigningKey, SigningKeys } from "./signing-keys.ts";

const HOUR_MS = 3_600_000;

describe("signing keys", () => {
  it("makes the first key on first use, sealed with the ring's active key, and publishes it", async () => {
    const d = fakeDeps();
    const [signer] = await d.signingKeys.signers();
    const [row] = [...d.keyStore.rows.values()];
    expect(row?.kid).toBe(signer?.kid);
    expect(row?.sealed_private_key).toMatch(/^v1\.k1\./);
    expect(row?.sealing_key_id).toBe("k1");
    expect((await d.signingKeys.jwks()).keys.map((k) => k.kid)).toEqual([signer?.kid]);
  });

  it("rotation: the new key first, the previous one beside it for the overlap; 0 drops every previous key", async () => {
    const d = fakeDeps();
    const [first] = await d.signingKeys.signers();
    const r1 = await d.keyStore.transaction((tx) => rotateSigningKey(tx, d.sealer, 2 * HOUR_MS));
    d.signingKeys.invalidate();
    expect(r1.previous.map((p) => p.kid)).toEqual([first?.kid]);
    expect((await d.signingKeys.signers()).map((s) => s.kid)).toEqual([r1.kid, first?.kid]);
    expect((await d.signingKeys.jwks()).keys.map((k) => k.kid)).toEqual([r1.kid, first?.kid]);

    // A longer overlap does not lengthen the first key's end.
    const firstEnd = d.keyStore.rows.get(String(first?.kid))?.expires_at;
    const r2 = await d.keyStore.transaction((tx) => rotateSigningKey(tx, d.sealer, 48 * HOUR_MS));
    expect(d.keyStore.rows.get(String(first?.kid))?.expires_at).toEqual(firstEnd);
    expect(r2.previous.map((p) => p.kid).sort()).toEqual([first?.kid, r1.kid].sort());

    const r3 = await d.keyStore.transaction((tx) => rotateSigningKey(tx, d.sealer, 0));
    d.signingKeys.invalidate();
    expect(r3.previous).toEqual([]);
    expect((await d.signingKeys.jwks()).keys.map((k) => k.kid)).toEqual([r3.kid]);
    const expired = [...d.keyStore.rows.values()].filter((r) => r.status === "expired");
    expect(expired.map((r) => r.sealed_private_key)).toEqual([null, null, null]);
  });

  it("without a ring nothing signs or rotates: 503 service_unavailable", async () => {
    const d = fakeDeps({ sealer: undefined });
    await expect(d.signingKeys.signers()).rejects.toMatchObject({ code: "service_unavailable" });
    await expect(d.keyStore.transaction((tx) => rotateSigningKey(tx, undefined, HOUR_MS))).rejects.toMatchObject({ code: "service_unavailable" });
  });

  it("the reseal pass moves private keys to the active ring key, and they still sign", async () => {
    const old = generateKeyRingEntry("k1");
    const d = fakeDeps({ sealer: new Sealer(parseKeyRing(old)) });
    const [before] = await d.signingKeys.signers();
    const next = generateKeyRingEntry("k2");
    const ring = parseKeyRing(`${old},${next}`, "k2");
    const sealer = new Sealer(ring);
    expect(await resealSigningKeys(d.keyStore, sealer, [...ring.keys.keys()], 10, pino({ level: "silent" }))).toBe(1);
    expect([...d.keyStore.rows.values()].map((r) => r.sealing_key_id)).toEqual(["k2"]);
    // A ring that no longer holds k1 opens it.
    const fresh = new SigningKeys(d.keyStore, new Sealer(parseKeyRing(next)), pino({ level: "silent" }));
    expect((await fresh.signers()).map((s) => s.kid)).toEqual([before?.kid]);
  });
});
