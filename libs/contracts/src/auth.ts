import { z } from "zod";

/** The seven scopes of the spec. */
export const SCOPES = ["read", "payments", "payouts", "creators", "webhooks", "accounting", "risk"] as const;
export const Scope = z.enum(SCOPES);
export type Scope = z.infer<typeof Scope>;

export type Environment = "sandbox" | "live";

/**
 * Who is calling, as the gateway established it. Travels with every RPC; services trust it because only the
 * gateway (and other services) can publish on service subjects.
 */
export const AuthContext = z.object({
  org_id: z.string(),
  livemode: z.boolean(),
  key_id: z.string(),
  /** null = a key without a scope list: full access. */
  scopes: z.array(Scope).nullable(),
  request_id: z.string(),
});
export type AuthContext = z.infer<typeof AuthContext>;

export const API_KEY_RE = /^(slk|sk)_(test|live)_[A-Za-z0-9]{16,}$/;

/** Environment from a key's prefix; legacy `sk_` prefixes mean the same. */
export function environmentOfKey(key: string): Environment | null {
  const m = API_KEY_RE.exec(key);
  if (!m) return null;
  return m[2] === "live" ? "live" : "sandbox";
}

export function hasScope(scopes: readonly Scope[] | null, needed: Scope): boolean {
  return scopes === null || scopes.includes(needed);
}
