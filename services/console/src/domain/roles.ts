/**
 * What each operator role may do, checked by the server on every request (a hidden button is not a control).
 * viewer reads; reviewer also decides KYC and risk reviews and reveals personal data for it; admin also manages
 * orgs and keys and runs the bank rail's operations.
 */
export const ROLES = ["viewer", "reviewer", "admin"] as const;
export type Role = (typeof ROLES)[number];

export type Permission = "read" | "review" | "manage";

const GRANTS: Record<Role, readonly Permission[]> = {
  viewer: ["read"],
  reviewer: ["read", "review"],
  admin: ["read", "review", "manage"],
};

export function may(role: Role, permission: Permission): boolean {
  return GRANTS[role].includes(permission);
}

export function isRole(value: string): value is Role {
  return (ROLES as readonly string[]).includes(value);
}

/** The actor the owning services record for a console action. */
export function actorOf(email: string): string {
  return `operator:${email}`;
}
