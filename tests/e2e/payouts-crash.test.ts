// Payouts as a real process killed with -9 mid-payout: between the intent and the ledger post, and between the
// ledger post and the settle step. After a restart the reconciler finishes each payout: the money moved once,
// each event written once, the balance exactly before − amount, and a client retry reads the first outcome.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, spawnService, waitFor, type SpawnedService } from "@treasury/testing";
import { apiOf, creatorWallet, fund, newParticipant, startPayoutsStack, type Api, type PayoutsStack } from "./payouts-stack.ts";

let p: PayoutsStack;
let api: Api;
const children: SpawnedService[] = [];

beforeAll(async () => {
  // Gateway, ledger and kyc in this process; payouts is a real child process the test can kill.
  p = await startPayoutsStack({ buildPayouts: false });
  api = apiOf(p);
}, 120_000);
afterAll(async () => {
  for (const c of children) c.kill("SIGKILL");
  await Promise.all(children.map((c) => c.exited));
  await p?.stop();
});

async function startPayouts(extra: Record<string, string>, entry?: string): Promise<SpawnedService> {
  const child = spawnService(
    "payouts",
    p.payoutsEnv({ HEALTH_PORT: String(await freePort()), LOG_LEVEL: "warn", ...extra }),
    entry === undefined ? {} : { entry },
  );
  children.push(child);
  await child.ready;
  return child;
}

async function n(query: Promise<Array<{ n: string }>>): Promise<number> {
  return Number((await query)[0]?.n ?? 0);
}
const ledgerMoves = (ref: string) => n(p.env.adminSql<{ n: string }[]>`select count(*)::text as n from ledger.transactions where reference_id = ${ref}`);
const payoutRows = (ref: string) => p.env.adminSql<{ id: string; status: string }[]>`select id, status from payouts.payouts where reference_id = ${ref}`;
const events = (id: string) => p.env.adminSql<{ type: string }[]>`select type from payouts.outbox where payload->'data'->>'id' = ${id} order by seq`;

async function crashAndRecover(fixture: string, movedAtCrash: number): Promise<void> {
  const crashing = await startPayouts({ PAYOUTS_RECONCILE_INTERVAL_MS: "600000" }, fixture);
  const pid = await newParticipant(api, p.s.testKey, "crash_creator");
  await fund(api, p.s.testKey, pid, 10_000);
  const body = { participant_id: pid, amount: 4321, reference_id: `crash_${pid}`, fees: 21, fees_paid_by: "creator" };

  const inFlight = api("POST", "/v1/payouts", p.s.testKey, body);
  await waitFor(() => crashing.output().some((l) => l.includes("PAYOUTS_CRASH_POINT_REACHED")), { timeoutMs: 20_000 });
  const [row] = await payoutRows(body.reference_id);
  expect(row?.status).toBe("posting");
  const ref = `payout:${row?.id ?? ""}`;
  expect(await ledgerMoves(ref)).toBe(movedAtCrash);
  expect(await events(row?.id ?? "")).toEqual([]);

  crashing.kill("SIGKILL");
  expect((await crashing.exited).signal).toBe("SIGKILL");
  // The client was told "outcome unknown", never "failed".
  expect([503, 504]).toContain((await inFlight).status);

  const healthy = await startPayouts({ PAYOUTS_RECONCILE_INTERVAL_MS: "100", PAYOUTS_RECONCILE_GRACE_MS: "0" });
  await waitFor(async () => (await payoutRows(body.reference_id))[0]?.status === "paid", { timeoutMs: 20_000 });
  expect(await ledgerMoves(ref)).toBe(1);
  expect((await events(row?.id ?? "")).map((e) => e.type)).toEqual(["payout.created", "payout.executed"]);
  expect((await creatorWallet(api, p.s.testKey, pid)).balance).toBe(10_000 - 4321);

  // A client retry reads the settled payout; still one movement and one pair of events.
  const retry = await api("POST", "/v1/payouts", p.s.testKey, body);
  expect(retry.status).toBe(409);
  expect(retry.body).toMatchObject({
    error_code: "duplicate_reference_id",
    payout: { id: row?.id, status: "paid", gross_amount_cents: 4321, net_amount_cents: 4300 },
  });
  expect(await ledgerMoves(ref)).toBe(1);
  expect(await payoutRows(body.reference_id)).toHaveLength(1);
  expect((await creatorWallet(api, p.s.testKey, pid)).balance).toBe(10_000 - 4321);
  healthy.kill("SIGTERM");
  await healthy.exited;
}

describe("kill -9 in the middle of a payout", () => {
  // Two process starts (tsx) dominate the time; on a loaded 2-core machine they can take several seconds each.
  it("between the intent and the ledger post: nothing moved; the reconciler posts it once", { timeout: 120_000 }, async () => {
    // Proves a crash before the post loses nothing: the intent survives and is driven to paid after restart.
    await crashAndRecover("tests/e2e/fixtures/payouts-crash-after-intent.ts", 0);
  });

  it("between the ledger post and the settle step: the money moved once; the reconciler settles it", { timeout: 120_000 }, async () => {
    // Proves a crash after the post doubles nothing: the re-drive gets the ledger's first result, events are written once.
    await crashAndRecover("tests/e2e/fixtures/payouts-crash-after-post.ts", 1);
  });
});
