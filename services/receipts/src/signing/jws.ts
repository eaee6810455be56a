/**
 * Compact JWS with `jose`: the service's EdDSA (Ed25519) signatures over proofs, and the counterparties'
 * ES256 or EdDSA signatures over a proof's receipt hash.
 */
import {
  calculateJwkThumbprint,
  CompactSign,
  compactVerify,
  decodeProtectedHeader,
  exportJWK,
  exportPKCS8,
  generateKeyPair,
  importJWK,
  importPKCS8,
  type JWK,
} from "jose";

export const SERVICE_ALG = "EdDSA";
/** The service's private Ed25519 key, opened in memory. */
export type PrivateSigningKey = Awaited<ReturnType<typeof importPKCS8>>;

export interface NewSigningKey {
  kid: string;
  publicJwk: PublicJwk;
  /** PKCS#8 PEM: sealed before it is stored, never logged. */
  privatePkcs8: string;
}

/** The public members of an Ed25519 or P-256 key; nothing else is kept or published. */
export type PublicJwk = { kty: "OKP"; crv: "Ed25519"; x: string } | { kty: "EC"; crv: "P-256"; x: string; y: string };

export async function generateSigningKey(): Promise<NewSigningKey> {
  const { publicKey, privateKey } = await generateKeyPair("Ed25519", { extractable: true });
  const jwk = await exportJWK(publicKey);
  const publicJwk: PublicJwk = { kty: "OKP", crv: "Ed25519", x: String(jwk.x) };
  return { kid: await calculateJwkThumbprint(publicJwk), publicJwk, privatePkcs8: await exportPKCS8(privateKey) };
}

export function importPrivateKey(pkcs8: string): Promise<PrivateSigningKey> {
  return importPKCS8(pkcs8, SERVICE_ALG);
}

export async function signCompact(key: PrivateSigningKey, kid: string, payload: string): Promise<string> {
  return new CompactSign(new TextEncoder().encode(payload)).setProtectedHeader({ alg: SERVICE_ALG, kid }).sign(key);
}

/**
 * The public members of a counterparty's JWK and the JWS algorithm it implies, or undefined when it is not a
 * public P-256 or Ed25519 key (a JWK carrying a private member `d` is refused: it must never be stored).
 */
export function publicJwkOf(input: Record<string, unknown>): { jwk: PublicJwk; alg: "ES256" | "EdDSA" } | undefined {
  if ("d" in input) return undefined;
  const b64url = (v: unknown): v is string => typeof v === "string" && /^[A-Za-z0-9_-]{40,50}$/.test(v);
  if (input["kty"] === "OKP" && input["crv"] === "Ed25519" && b64url(input["x"])) return { jwk: { kty: "OKP", crv: "Ed25519", x: input["x"] }, alg: "EdDSA" };
  if (input["kty"] === "EC" && input["crv"] === "P-256" && b64url(input["x"]) && b64url(input["y"])) {
    return { jwk: { kty: "EC", crv: "P-256", x: input["x"], y: input["y"] }, alg: "ES256" };
  }
  return undefined;
}

/** JWS `alg` values a key type may use: Ed25519 keys take EdDSA or its fully specified name Ed25519. */
function algorithmsFor(alg: "ES256" | "EdDSA"): string[] {
  return alg === "ES256" ? ["ES256"] : ["EdDSA", "Ed25519"];
}

/** A detached JWS (empty payload segment) gets `payload` put back; an attached one is left as it is. */
function attach(jws: string, payload: string): string {
  const [header, body, signature] = jws.split(".");
  if (body !== "") return jws;
  return `${header}.${Buffer.from(payload, "utf8").toString("base64url")}.${signature}`;
}

/**
 * True when `jws` is a valid signature by `jwk` whose payload (attached, or `payload` for a detached JWS) is
 * exactly `payload`. Never throws for a bad signature, key or encoding: those are simply not valid.
 */
export async function verifiesOver(jws: string, key: { jwk: PublicJwk; alg: "ES256" | "EdDSA" }, payload: string): Promise<boolean> {
  try {
    const publicKey = await importJWK(key.jwk as JWK, key.alg === "ES256" ? "ES256" : "EdDSA");
    const { payload: signed } = await compactVerify(attach(jws, payload), publicKey, { algorithms: algorithmsFor(key.alg) });
    return new TextDecoder().decode(signed) === payload;
  } catch {
    return false;
  }
}

/** The `kid` and `alg` of a compact JWS's protected header, or undefined when it cannot be read. */
export function headerOf(jws: string): { kid?: string; alg?: string } | undefined {
  try {
    const h = decodeProtectedHeader(jws);
    return { ...(typeof h.kid === "string" ? { kid: h.kid } : {}), ...(typeof h.alg === "string" ? { alg: h.alg } : {}) };
  } catch {
    return undefined;
  }
}
