// Proves the claim of due processor checks on real PostgreSQL: replicas claiming at once never take the same
// session, a claimed session's next check moves past its expiry, and a session not yet due or no longer pending
// is not taken.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { setupTestEnv, type TestEnv } from "@treasury/testing";
import { claimDueChecks } from "./store/processor-checks.ts";

let env: TestEnv;
beforeAll(async () => {
  env = await setupTestEnv();
});
afterAll(async () => {
  await env?.cleanup();
});

const TTL_MS = 3_600_000;
const AFTER_MS = 600_000;

async function topup(id: string, status: string, checkAt: string): Promise<void> {
  await env.adminSql`
    insert into payments.wallet_topups (id, org_id, livemode, wallet_session_id, wallet_id, amount, nonce, status, processor_session_id,
      processor_check_at, created_at)
    values (${id}, 'org_checks', true, 'wals_1', gen_random_uuid(), 2500, ${id}, ${status}, ${`cs_${id}`}, now() + ${checkAt}::interval,
      now() - interval '10 minutes')`;
}

describe("claimDueChecks", () => {
  it("gives each due session to one claimer, moves its next check past its expiry, and leaves the rest", async () => {
    for (let i = 0; i < 20; i++) await topup(`wtop_due_${i}`, "pending", "-1 second");
    await topup("wtop_later", "pending", "5 minutes");
    await topup("wtop_done", "failed", "-1 second");
    const opts = { afterMs: AFTER_MS, topupTtlMs: TTL_MS, limit: 50 };
    const claims = await Promise.all(Array.from({ length: 4 }, () => claimDueChecks(env.adminSql, opts)));
    const ids = claims.flat().map((c) => c.id);
    expect(ids.sort()).toEqual(Array.from({ length: 20 }, (_, i) => `wtop_due_${i}`).sort());
    expect(new Set(ids).size).toBe(20);
    expect(claims.flat().every((c) => c.kind === "topup" && c.processor_session_id === `cs_${c.id}`)).toBe(true);
    // Expiry is creation + TTL (50 minutes from now); the next check is AFTER_MS past it.
    const [moved] = await env.adminSql<{ ok: boolean }[]>`
      select bool_and(processor_check_at = created_at + make_interval(secs => ${TTL_MS / 1000}) + make_interval(secs => ${AFTER_MS / 1000})) as ok
        from payments.wallet_topups where id like 'wtop_due_%'`;
    expect(moved?.ok).toBe(true);
    expect(await claimDueChecks(env.adminSql, opts)).toEqual([]);
  });

  it("asks one last time about a session a week past its expiry, then no more", async () => {
    await topup("wtop_old", "pending", "-1 second");
    await env.adminSql`update payments.wallet_topups set created_at = now() - interval '9 days' where id = 'wtop_old'`;
    const opts = { afterMs: AFTER_MS, topupTtlMs: TTL_MS, limit: 50 };
    expect((await claimDueChecks(env.adminSql, opts)).map((c) => c.id)).toEqual(["wtop_old"]);
    const [row] = await env.adminSql<{ processor_check_at: Date | null }[]>`select processor_check_at from payments.wallet_topups where id = 'wtop_old'`;
    expect(row?.processor_check_at).toBeNull();
  });
});
