/**
 * Whose data a request touches: one org in one environment. Every service scopes its reads and writes by it;
 * it is not an API key's `Scope` (auth.ts), which says what a key may do.
 */
export interface Tenant {
  readonly orgId: string;
  readonly livemode: boolean;
}

/** The tenant an authenticated request (or an internal payload naming `org_id` and `livemode`) acts for. */
export function tenantOf(auth: { readonly org_id: string; readonly livemode: boolean }): Tenant {
  return { orgId: auth.org_id, livemode: auth.livemode };
}
