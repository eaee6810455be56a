// Proves the periodic invariant check on the ledger's /metrics: of two replicas only the lock holder runs it, a
// corrupted balance shows as a violation named by invariant and disappears once repaired, the other replica
// takes over when the holder stops; and posting batch sizes are observed.
import { setupTestEnv, waitFor, type TestEnv } from "@treasury/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildLedger, type LedgerService } from "../service.ts";
import { authFor, newOrg, ok } from "../test-support.ts";
import { rpcCall } from "@treasury/service-kit";
import { rpcSubject } from "@treasury/contracts";

let env: TestEnv;
const replicas: Array<{ svc: LedgerService; base: string; stopped: boolean }> = [];

beforeAll(async () => {
  env = await setupTestEnv();
  for (let i = 0; i < 2; i++) {
    const svc = await buildLedger(env.env("ledger", { LEDGER_VERIFY_INTERVAL_MS: "200", LEDGER_VERIFY_TIMEOUT_MS: "10000" }));
    const { healthPort } = await svc.start();
    replicas.push({ svc, base: `http://127.0.0.1:${healthPort}`, stopped: false });
  }
});
afterAll(async () => {
  for (const r of replicas) if (!r.stopped) await r.svc.stop();
  await env?.cleanup();
});

/** One scrape of a replica's /metrics: the value of `name` whose labels include `labels`. */
async function scrape(base: string, name: string, labels: Record<string, string> = {}): Promise<number | undefined> {
  const text = await (await fetch(`${base}/metrics`)).text();
  for (const line of text.split("\n")) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{([^}]*)\})? (\S+)$/.exec(line);
    if (m?.[1] !== name) continue;
    const have = Object.fromEntries([...(m[2] ?? "").matchAll(/([a-z_]+)="([^"]*)"/g)].map((l) => [l[1], l[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) return Number(m[3]);
  }
  return undefined;
}

async function call(op: string, org: string, body: unknown, params: Record<string, string> = {}) {
  return rpcCall(await env.nats(), rpcSubject(env.prefix, "ledger", op), { auth: authFor(org), params, query: {}, body }, { timeoutMs: 20_000 });
}

/** The replica that holds the check's lock (waits until one has run it). */
async function leader(): Promise<{ svc: LedgerService; base: string; stopped: boolean }> {
  let found: (typeof replicas)[number] | undefined;
  await waitFor(
    async () => {
      for (const r of replicas.filter((x) => !x.stopped)) {
        if ((await scrape(r.base, "ledger_verify_leader")) === 1 && ((await scrape(r.base, "ledger_verify_runs_total", { outcome: "ok" })) ?? 0) > 0) found = r;
      }
      return found !== undefined;
    },
    { timeoutMs: 15_000 },
  );
  if (found === undefined) throw new Error("no replica runs the check");
  return found;
}

describe("periodic ledger verify", () => {
  it("runs on one replica only and exports a broken invariant until it is repaired", { timeout: 60_000 }, async () => {
    const org = newOrg();
    const wallet = String((ok(await call("createWallet", org, { owner_id: "verify", redeemable: true })).body["wallet"] as Record<string, unknown>)["id"]);
    ok(await call("depositToWallet", org, { amount: 1500, reference_id: "verify-1" }, { wallet_id: wallet }));

    const holder = await leader();
    const other = replicas.find((r) => r !== holder);
    if (other === undefined) throw new Error("two replicas expected");
    expect(await scrape(other.base, "ledger_verify_leader")).toBe(0);
    expect(await scrape(other.base, "ledger_verify_runs_total", { outcome: "ok" })).toBeUndefined();
    expect(await scrape(holder.base, "ledger_verify_last_success_timestamp_seconds")).toBeGreaterThan(Date.now() / 1000 - 60);

    // A wallet balance that its entries do not explain.
    await env.adminSql`update ledger.accounts set balance = balance + 1 where id = ${wallet}`;
    try {
      await waitFor(async () => ((await scrape(holder.base, "ledger_invariant_violations", { invariant: "wallet_balance_equals_entries" })) ?? 0) >= 1, {
        timeoutMs: 15_000,
      });
      expect(await scrape(other.base, "ledger_invariant_violations", { invariant: "wallet_balance_equals_entries" })).toBeUndefined();
    } finally {
      await env.adminSql`update ledger.accounts set balance = balance - 1 where id = ${wallet}`;
    }
    await waitFor(async () => (await scrape(holder.base, "ledger_invariant_violations", { invariant: "wallet_balance_equals_entries" })) === undefined, {
      timeoutMs: 15_000,
    });
    expect(await scrape(holder.base, "ledger_verify_runs_total", { outcome: "violations" })).toBeGreaterThanOrEqual(1);

    // The holder stops; its session and lock end with it, and the other replica takes over.
    holder.stopped = true;
    await holder.svc.stop();
    expect(await leader()).toBe(other);
  });

  it("observes the size of every posting batch", async () => {
    const org = newOrg();
    const wallet = String((ok(await call("createWallet", org, { owner_id: "batches", redeemable: true })).body["wallet"] as Record<string, unknown>)["id"]);
    const running = replicas.filter((r) => !r.stopped);
    const total = async (name: string) => (await Promise.all(running.map(async (r) => (await scrape(r.base, name)) ?? 0))).reduce((a, b) => a + b, 0);
    const [batchesBefore, requestsBefore] = [await total("ledger_post_batch_size_count"), await total("ledger_post_batch_size_sum")];
    await Promise.all([1, 2, 3].map((i) => call("depositToWallet", org, { amount: 100 * i, reference_id: `batch-${i}` }, { wallet_id: wallet }).then(ok)));
    // Three deposits are three requests, committed in one to three batches.
    expect((await total("ledger_post_batch_size_sum")) - requestsBefore).toBe(3);
    const batches = (await total("ledger_post_batch_size_count")) - batchesBefore;
    expect(batches).toBeGreaterThanOrEqual(1);
    expect(batches).toBeLessThanOrEqual(3);
  });
});
