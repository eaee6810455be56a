/**
 * One read per tenant per event-loop turn. Every evaluation reads its tenant's enabled policies, active alert
 * configurations and fail modes before anything else; under load the money path's batched requests bring many
 * evaluations of one org in the same turn, and each of those reads would be a statement of its own. Callers of the
 * same tenant in one turn share one read, sent after the last of them arrived (setImmediate), so each still sees
 * everything committed before it asked: a policy created before a checkout is never missed because its read was
 * already on the way.
 */
import type { Tenant } from "@treasury/contracts";

export function sharedPerTurn<V>(read: (tenant: Tenant) => Promise<V>): (tenant: Tenant) => Promise<V> {
  let waiting = new Map<string, { tenant: Tenant; callers: { resolve: (v: V) => void; reject: (e: unknown) => void }[] }>();
  const flush = () => {
    const turn = waiting;
    waiting = new Map();
    for (const { tenant, callers } of turn.values()) {
      read(tenant).then(
        (v) => callers.forEach((c) => c.resolve(v)),
        (e: unknown) => callers.forEach((c) => c.reject(e)),
      );
    }
  };
  return (tenant) =>
    new Promise<V>((resolve, reject) => {
      if (waiting.size === 0) setImmediate(flush);
      const k = `${tenant.orgId}:${String(tenant.livemode)}`;
      const entry = waiting.get(k) ?? { tenant, callers: [] };
      entry.callers.push({ resolve, reject });
      waiting.set(k, entry);
    });
}
