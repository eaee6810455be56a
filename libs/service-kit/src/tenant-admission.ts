/**
 * Fair admission: how many requests of one tenant (org) a process works on at once while the process is busy.
 * When it is (half its slots, RPC_CONCURRENCY_MAX, in use), a tenant past its share has its next requests
 * answered "unavailable, retry in a second" at once, so one org's burst cannot take every slot or fill the
 * queues behind them, and other orgs keep their latency. An idle process lets one tenant use all of it.
 */
export class TenantAdmission {
  private readonly inFlight = new Map<string, number>();

  constructor(private readonly perTenantMax: number) {}

  /** A release function when the tenant is admitted, undefined when the process is busy and the tenant at its cap. */
  enter(tenant: string, busy: boolean): (() => void) | undefined {
    const n = this.inFlight.get(tenant) ?? 0;
    if (busy && n >= this.perTenantMax) return undefined;
    this.inFlight.set(tenant, n + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.inFlight.get(tenant) ?? 1) - 1;
      if (left <= 0) this.inFlight.delete(tenant);
      else this.inFlight.set(tenant, left);
    };
  }

  /** Requests of this tenant in flight now. */
  count(tenant: string): number {
    return this.inFlight.get(tenant) ?? 0;
  }
}

/** The org a request acts for: the gateway's auth context, or the org_id of an internal request (a posting). */
export function tenantOf(payload: unknown): string | undefined {
  if (typeof payload !== "object" || payload === null) return undefined;
  const p = payload as { auth?: { org_id?: unknown }; org_id?: unknown };
  const org = p.auth?.org_id ?? p.org_id;
  return typeof org === "string" ? org : undefined;
}
