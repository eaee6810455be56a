/**
 * Auto-release: holds created with `auto_release` (POST /v1/holds, a rolling reserve's holds) are released by the
 * ledger once hold_until passes on the hold's own clock (live: real time; sandbox: the org's test clock). One pass
 * selects what is due across every org in one statement and releases it in posting requests of up to
 * HOLDS_PER_POST_MAX holds each, per org and environment, several in flight at once.
 *
 * Exactly once: the engine releases a hold only while it is held (under its row lock), and a request's reference is
 * the hash of the holds it releases, so the same request posted twice (a pass cut short and run again) answers the
 * first result instead of a second movement. `hold.released` says `released_by: "schedule"`.
 */
import { createHash } from "node:crypto";
import { DomainError, HOLDS_PER_POST_MAX, type PostRequestInput, type Tenant } from "@treasury/contracts";
import type { LedgerDeps } from "./deps.ts";
import type { DueHold } from "./ports.ts";

export const KIND_HOLD_AUTO_RELEASE = "hold_auto_release";
/** Holds one pass selects; a pass that found this many runs again at once. */
export const AUTO_RELEASE_PASS_MAX = 5_000;
/** Posting requests of one pass in flight at once (each releases up to HOLDS_PER_POST_MAX holds). */
const IN_FLIGHT = 8;

export type AutoReleaseDeps = Pick<LedgerDeps, "holds" | "poster">;

export interface AutoReleaseClock {
  /** Real time (what live runs on). */
  realNow(): Date;
  /** Seconds each advanced sandbox runs ahead of real time. */
  advanced(): ReadonlyMap<string, number>;
}

export interface AutoReleaseOutcome {
  released: number;
  /** Holds of requests the ledger refused or could not post (the next pass tries them again). */
  failed: number;
  /** The last such error, for the job's log. */
  error?: unknown;
}

/** One pass: releases every due auto-release hold (at most AUTO_RELEASE_PASS_MAX; `more` says another pass is due). */
export async function releaseDueHolds(deps: AutoReleaseDeps, clock: AutoReleaseClock, signal?: AbortSignal): Promise<AutoReleaseOutcome & { more: boolean }> {
  const due = await deps.holds.dueForRelease(clock.realNow(), clock.advanced(), AUTO_RELEASE_PASS_MAX);
  const chunks = chunksOf(due);
  const outcome: AutoReleaseOutcome = { released: 0, failed: 0 };
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < chunks.length && signal?.aborted !== true) {
      const chunk = chunks[next++];
      if (chunk === undefined) return;
      const r = await releaseChunk(deps, chunk.tenant, chunk.ids);
      outcome.released += r.released;
      outcome.failed += r.failed;
      if (r.error !== undefined) outcome.error = r.error;
    }
  };
  await Promise.all(Array.from({ length: Math.min(IN_FLIGHT, chunks.length) }, worker));
  return { ...outcome, more: due.length === AUTO_RELEASE_PASS_MAX };
}

/** Due holds by org and environment, HOLDS_PER_POST_MAX per request, in the order they fell due. */
function chunksOf(due: readonly DueHold[]): { tenant: Tenant; ids: string[] }[] {
  const byTenant = new Map<string, { tenant: Tenant; ids: string[] }>();
  for (const h of due) {
    const key = `${h.org_id}\u0000${h.livemode}`;
    let group = byTenant.get(key);
    if (group === undefined) byTenant.set(key, (group = { tenant: { orgId: h.org_id, livemode: h.livemode }, ids: [] }));
    group.ids.push(h.id);
  }
  const out: { tenant: Tenant; ids: string[] }[] = [];
  for (const { tenant, ids } of byTenant.values()) {
    for (let i = 0; i < ids.length; i += HOLDS_PER_POST_MAX) out.push({ tenant, ids: ids.slice(i, i + HOLDS_PER_POST_MAX) });
  }
  return out;
}

/** The request releasing `ids`: its reference is the hash of the sorted ids, so the same set is one posting. */
export function autoReleaseRequest(tenant: Tenant, ids: readonly string[]): PostRequestInput {
  const sorted = [...ids].sort();
  return {
    org_id: tenant.orgId,
    livemode: tenant.livemode,
    kind: KIND_HOLD_AUTO_RELEASE,
    reference_id: `auto_release:${createHash("sha256").update(sorted.join("\n")).digest("hex")}`,
    holds_release: sorted.map((hold_id) => ({ hold_id, transfer_executed: false })),
    description: sorted.length === 1 ? `Auto-release of hold ${sorted[0]}` : `Auto-release of ${sorted.length} holds`,
  };
}

/**
 * Posts one chunk. A hold released meanwhile by a client (hold_already_released names it) leaves the chunk and the
 * rest is posted again; any other refusal counts the chunk as failed, for the next pass.
 */
async function releaseChunk(deps: AutoReleaseDeps, tenant: Tenant, ids: string[]): Promise<AutoReleaseOutcome> {
  let left = ids;
  while (left.length > 0) {
    try {
      const outcome = await deps.poster.post(autoReleaseRequest(tenant, left), { releasedBy: "schedule" });
      return { released: outcome.duplicate ? 0 : outcome.result.holds_released.length, failed: 0 };
    } catch (e) {
      const gone = e instanceof DomainError && e.code === "hold_already_released" ? e.extra?.["hold_id"] : undefined;
      if (typeof gone !== "string" || !left.includes(gone)) return { released: 0, failed: left.length, error: e };
      left = left.filter((id) => id !== gone);
    }
  }
  return { released: 0, failed: 0 };
}
