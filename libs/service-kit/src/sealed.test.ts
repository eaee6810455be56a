// Proves AES-256-GCM sealing with a key ring: round trips, tampering and wrong keys fail, keys rotate, nothing leaks in errors.
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { generateKeyRingEntry, parseKeyRing, sealedKeyId, SealedValueError, Sealer } from "./sealed.ts";

const k1 = generateKeyRingEntry("k1");
const k2 = generateKeyRingEntry("k2");
const secret = "Ada Lovelace, 1815-12-10, 12 St James's Square";

/** Flips one bit of the character at `index` of a base64url part, keeping the text base64url. */
function flip(sealed: string, part: 2 | 3, index: number): string {
  const parts = sealed.split(".");
  const bytes = Buffer.from(parts[part]!, "base64url");
  bytes[index % bytes.length]! ^= 0x01;
  parts[part] = bytes.toString("base64url");
  return parts.join(".");
}

/** Matches a thrown error whose name, message and stack all leave out `text`. */
function withoutText(text: string) {
  const absent = expect.not.stringContaining(text);
  return expect.objectContaining({ name: absent, message: absent, stack: absent });
}

describe("parseKeyRing", () => {
  it("reads kid:base64key entries and picks the only key or the named one as active", () => {
    // Proves the configuration format and the active-key rule.
    expect(parseKeyRing(k1).activeKeyId).toBe("k1");
    const ring = parseKeyRing(`${k1}, ${k2}`, "k2");
    expect(ring.activeKeyId).toBe("k2");
    expect([...ring.keys.keys()]).toEqual(["k1", "k2"]);
  });

  it("refuses bad rings without printing key material", () => {
    // Proves each configuration mistake is an error whose message holds no key bytes.
    const key = k1.split(":")[1]!;
    const shortKey = randomBytes(16).toString("base64");
    const bad: [string, string | undefined][] = [
      ["", undefined],
      [`${k1},${k2}`, undefined],
      [`${k1},${k2}`, "k3"],
      [`k1:${shortKey}`, undefined],
      [`bad id:${key}`, undefined],
      [`${k1},${k1}`, undefined],
      [key, undefined],
    ];
    for (const [spec, active] of bad) {
      expect(() => parseKeyRing(spec, active), spec).toThrow(SealedValueError);
      for (const material of [key, shortKey]) expect(() => parseKeyRing(spec, active), spec).toThrow(withoutText(material));
    }
  });
});

describe("Sealer", () => {
  it("round-trips text and JSON, with a fresh IV each time and no plaintext in the sealed form", () => {
    // Proves seal/open, the v1.<kid>.<iv>.<body> format and that two seals of one value differ.
    const s = new Sealer(parseKeyRing(k1));
    const a = s.seal(secret, "row_1");
    const b = s.seal(secret, "row_1");
    expect(a).not.toBe(b);
    expect(a).toMatch(/^v1\.k1\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]+$/);
    expect(a).not.toContain("Ada");
    expect(s.open(a, "row_1")).toBe(secret);
    expect(s.openJson(s.sealJson({ dob: "1815-12-10", n: 1 }))).toEqual({ dob: "1815-12-10", n: 1 });
    expect(s.open(s.seal(""))).toBe("");
    expect(sealedKeyId(a)).toBe("k1");
  });

  it("fails on any tampering: IV, ciphertext, tag, key id or associated data", () => {
    // Proves GCM authentication covers every part of the value and its context.
    const ring = parseKeyRing(`${k1},${k2}`, "k1");
    const s = new Sealer(ring);
    const sealed = s.seal(secret, "row_1");
    const body = Buffer.from(sealed.split(".")[3]!, "base64url");
    const tampered = [flip(sealed, 2, 0), flip(sealed, 3, 0), flip(sealed, 3, body.length - 1), sealed.replace("v1.k1.", "v1.k2."), sealed.slice(0, -4)];
    for (const t of tampered) expect(() => s.open(t, "row_1"), t).toThrow(SealedValueError);
    expect(() => s.open(sealed, "row_2")).toThrow(SealedValueError);
    expect(() => s.open(sealed)).toThrow(SealedValueError);
    for (const junk of ["", "plain text", "v2.k1.a.b", "v1.k1.!!.??", "v1.k1..", "v1.k1.AAAA.AAAA"]) {
      expect(() => s.open(junk), junk).toThrow(SealedValueError);
    }
  });

  it("fails with a key id the ring does not hold, and with another key under the same id", () => {
    // Proves an unknown key id is an error and that a same-named but different key does not open the value.
    const sealed = new Sealer(parseKeyRing(k1)).seal(secret);
    expect(() => new Sealer(parseKeyRing(k2)).open(sealed)).toThrow(/no key "k1"/);
    const impostor = generateKeyRingEntry("k1");
    expect(() => new Sealer(parseKeyRing(impostor)).open(sealed)).toThrow(SealedValueError);
  });

  it("rotates: old values still open, new seals use the active key, a re-seal moves a value to it", () => {
    // Proves rotation through the ring: add k2 as active, keep k1 to open old rows, re-seal, then retire k1.
    const before = new Sealer(parseKeyRing(k1));
    const old = before.seal(secret, "row_1");
    const after = new Sealer(parseKeyRing(`${k1},${k2}`, "k2"));
    expect(after.open(old, "row_1")).toBe(secret);
    expect(after.needsReseal(old)).toBe(true);
    const moved = after.seal(after.open(old, "row_1"), "row_1");
    expect(sealedKeyId(moved)).toBe("k2");
    expect(after.needsReseal(moved)).toBe(false);
    const retired = new Sealer(parseKeyRing(k2));
    expect(retired.open(moved, "row_1")).toBe(secret);
    expect(() => retired.open(old, "row_1")).toThrow(SealedValueError);
  });

  it("never puts plaintext or key bytes in an error message", () => {
    // Proves failures are safe to log.
    const key = k1.split(":")[1]!;
    const s = new Sealer(parseKeyRing(k1));
    const sealed = s.seal(secret, "row_1");
    const failures = [() => s.open(flip(sealed, 3, 3), "row_1"), () => s.open(sealed, "row_2"), () => new Sealer(parseKeyRing(k2)).open(sealed, "row_1")];
    for (const fail of failures) {
      expect(fail).toThrow(SealedValueError);
      expect(fail).toThrow(withoutText("Ada"));
      expect(fail).toThrow(withoutText(key));
    }
  });
});
