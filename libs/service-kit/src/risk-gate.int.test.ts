// Proves the money path's risk gate on real NATS and PostgreSQL, against a stand-in risk replica: a deny is 422
// risk_denied with its evaluation; risk's fail modes come with its answers and are kept, so when risk stays silent
// past the deadline the org's mode decides (also for a gate started afterwards: a caller's restart); an org never
// heard of follows the defaults (checkout open, payout closed); each such decision is recorded and counted.
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { NatsConnection } from "@nats-io/transport-node";
import { DomainError, internalSubject, schemas, type Tenant } from "@treasury/contracts";
import { Registry } from "prom-client";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createDb, type Sql } from "./db.ts";
import { migrateAll } from "./migrate.ts";
import { connectNats } from "./nats.ts";
import { natsRiskGate, type RiskGate } from "./risk-gate.ts";
import { captureLogger, createTestDatabase, randomPrefix, TEST_NATS_URL, waitFor, type TestDatabase } from "./test-support.ts";

const SCHEMA = "kit_risk_gate";
const prefix = randomPrefix();
const { log } = captureLogger("risk-gate");
let db: TestDatabase;
let sql: Sql;
let nc: NatsConnection;
/** What the stand-in risk replica does with the next requests. */
let mode: "allow" | "deny" | "silent" = "allow";
const OPEN_PAYOUTS = { ...schemas.DEFAULT_RISK_FAIL_MODES, payout: "open" };

beforeAll(async () => {
  db = await createTestDatabase();
  await migrateAll({ adminUrl: db.url, rootDir: await mkdtemp(join(tmpdir(), "kit-risk-")), services: [SCHEMA] });
  sql = createDb(db.url, { max: 4 });
  nc = await connectNats({ url: TEST_NATS_URL, name: "risk-gate-test" });
  nc.subscribe(internalSubject(prefix, "risk", schemas.RISK_EVALUATE_OPERATION), {
    callback: (_err, msg) => {
      if (mode === "silent") return;
      const req = JSON.parse(new TextDecoder().decode(msg.data)) as { key: string; operation: string; amount: number };
      const evaluation = {
        id: `feval_${req.key}`,
        decision: mode,
        hits: mode === "deny" ? [{ policy_id: "fpol_1", policy_type: "amount_limit", severity: "hard", reason: "too much" }] : [],
      };
      msg.respond(JSON.stringify({ ok: true, status: 200, body: { evaluation, duplicate: false, fail_modes: OPEN_PAYOUTS } }));
    },
  });
  await nc.flush();
});

afterAll(async () => {
  await nc?.drain();
  await sql?.end();
  await db?.drop();
});

function gate(metrics = new Registry()): RiskGate {
  return natsRiskGate(nc, prefix, { caller: "payments", deadlineMs: 300, sql, schema: SCHEMA, log, metrics });
}

const known: Tenant = { orgId: "org_known", livemode: false };
const stranger: Tenant = { orgId: "org_stranger", livemode: false };
const proposal = (operation: "checkout" | "payout", key: string) => ({ operation, key, amount: 1_000, participant_id: "creator_1" });

async function codeOf(p: Promise<unknown>): Promise<{ code: string; extra: Record<string, unknown> | undefined }> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  if (!(e instanceof DomainError)) throw new Error(`expected a DomainError, got ${String(e)}`);
  return { code: e.code, extra: e.extra };
}

it("answers an allow, refuses a deny with its evaluation, and keeps the org's fail modes", async () => {
  const g = gate();
  mode = "allow";
  expect(await g.check(known, proposal("payout", "payout:p1"))).toEqual({ decision: "allow", evaluationId: "feval_payout:p1", failedOpen: false });
  mode = "deny";
  const denied = await codeOf(g.check(known, proposal("checkout", "checkout:c1")));
  expect(denied).toMatchObject({ code: "risk_denied", extra: { evaluation_id: "feval_checkout:c1", hits: [{ policy_type: "amount_limit" }] } });
  await waitFor(
    async () => (await sql`select 1 from ${sql(`${SCHEMA}.risk_fail_modes`)} where org_id = ${known.orgId}`).length === 1,
    5_000,
    "the fail modes stored",
  );
});

it("follows the org's kept mode when risk is silent past the deadline, also in a gate started afterwards", async () => {
  mode = "silent";
  const metrics = new Registry();
  const restarted = gate(metrics);
  expect(await restarted.check(known, proposal("payout", "payout:p2"))).toEqual({ decision: "allow", evaluationId: null, failedOpen: true });
  // An org risk never answered for follows the defaults: checkouts open, payouts closed.
  expect(await restarted.check(stranger, proposal("checkout", "checkout:c2"))).toMatchObject({ failedOpen: true });
  expect((await codeOf(restarted.check(stranger, proposal("payout", "payout:p3")))).code).toBe("risk_unavailable");

  const rows = await sql<{ org_id: string; key: string; mode: string; cause: string }[]>`
    select org_id, key, mode, cause from ${sql(`${SCHEMA}.risk_fail_safes`)} order by key`;
  expect(rows).toEqual([
    { org_id: stranger.orgId, key: "checkout:c2", mode: "open", cause: "service_timeout" },
    { org_id: known.orgId, key: "payout:p2", mode: "open", cause: "service_timeout" },
    { org_id: stranger.orgId, key: "payout:p3", mode: "closed", cause: "service_timeout" },
  ]);
  const counted = await metrics.getSingleMetricAsString("risk_fail_safe_total");
  expect(counted).toContain('risk_fail_safe_total{operation="payout",mode="open"} 1');
  expect(counted).toContain('risk_fail_safe_total{operation="payout",mode="closed"} 1');
  expect(counted).toContain('risk_fail_safe_total{operation="checkout",mode="open"} 1');
});
