// The stack the live card tests run against: ledger and refunds behind the gateway, payments with the card
// processor's API played by a loopback stand-in (processor-stand-in.ts) and its events signed with SECRET, and
// webhooks to fan events out; and the helpers those tests share to make and read what they check.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, expect } from "vitest";
import { setupTestEnv, waitFor, type TestEnv } from "@treasury/testing";
import type { Service } from "@treasury/service-kit";
import { buildPayments, type PaymentsService } from "../../services/payments/src/service.ts";
import { buildWebhooks } from "../../services/webhooks/src/service.ts";
import { checkoutSessionObject, processorEvent, rid, sendWebhook, signed, startProcessorStandIn, type ProcessorStandIn } from "./processor-stand-in.ts";
import { call, startStack, type Stack } from "./stack.ts";

export const SECRET = `whsec_${randomUUID().replace(/-/g, "")}`;

/** What a test file of the live card tests runs against. */
export interface LiveProcessor {
  env: TestEnv;
  s: Stack;
  proc: ProcessorStandIn;
  payments: PaymentsService;
  webhooksSvc: Service;
}

let live: LiveProcessor | undefined;

function started(): LiveProcessor {
  if (live === undefined) throw new Error("the live processor stack is not started: call useLiveProcessor() in the test file");
  return live;
}

/** Starts the stack before the file's tests (handing it to `onStarted`) and stops it after them. */
export function useLiveProcessor(onStarted: (live: LiveProcessor) => void): void {
  let env: TestEnv | undefined;
  let s: Stack | undefined;
  let proc: ProcessorStandIn | undefined;
  let payments: PaymentsService | undefined;
  let webhooksSvc: Service | undefined;
  beforeAll(async () => {
    env = await setupTestEnv();
    proc = await startProcessorStandIn();
    s = await startStack({ env, services: ["ledger", "refunds"] });
    payments = await buildPayments(
      env.env("payments", {
        STRIPE_SECRET_KEY: "sk_live_stand_in_secret_value",
        STRIPE_API_BASE: proc.url,
        STRIPE_WEBHOOK_SECRET: SECRET,
        STRIPE_TIMEOUT_MS: "2000",
        STRIPE_MAX_NETWORK_RETRIES: "1",
        PAYMENTS_PROCESSOR_POLL_MS: "100",
        PAYMENTS_RECONCILE_INTERVAL_MS: "200",
        PAYMENTS_RECONCILE_GRACE_MS: "500",
      }),
    );
    await payments.start();
    webhooksSvc = await buildWebhooks(env.env("webhooks", { WEBHOOK_TIMEOUT_MS: "300", WEBHOOK_POLL_INTERVAL_MS: "100" }));
    await webhooksSvc.start();
    live = { env, s, proc, payments, webhooksSvc };
    onStarted(live);
  }, 120_000);
  afterAll(async () => {
    await payments?.stop();
    await webhooksSvc?.stop();
    await s?.stop();
    await proc?.close();
    await env?.cleanup();
  });
}

export const api = (method: string, path: string, key: string, body?: unknown) =>
  call(started().s.baseUrl, method, path, { key, ...(body !== undefined ? { body } : {}) });

export async function n(query: Promise<{ n: string }[]>): Promise<number> {
  return Number((await query)[0]?.n ?? 0);
}
export const txCount = (reference: string) =>
  n(started().env.adminSql<{ n: string }[]>`select count(*)::text as n from ledger.transactions where reference_id = ${reference}`);
export const sessionStatus = async (id: string) =>
  (await started().env.adminSql<{ status: string }[]>`select status from payments.checkout_sessions where id = ${id}`)[0]?.status;

export async function entriesOf(reference: string): Promise<Array<[string, string, number]>> {
  const rows = await started().env.adminSql<Array<{ account_type: string; entry_type: string; amount: string }>>`
    select a.account_type, e.entry_type, e.amount::text as amount
      from ledger.entries e join ledger.accounts a on a.id = e.account_id join ledger.transactions t on t.id = e.transaction_id
     where t.reference_id = ${reference} order by e.seq`;
  return rows.map((r) => [r.account_type, r.entry_type, Number(r.amount)]);
}

export async function creatorWallet(pid: string, key = started().s.liveKey): Promise<{ balance: number; held_amount: number; available_balance: number }> {
  const r = await api("GET", `/v1/wallets?owner_id=${pid}&wallet_type=creator_earnings`, key);
  return (r.body["wallets"] as { balance: number; held_amount: number; available_balance: number }[])[0]!;
}

export async function participant(key = started().s.liveKey, split = 80): Promise<string> {
  const pid = rid("creator");
  expect((await api("POST", "/v1/participants", key, { participant_id: pid, default_split_percent: split })).status).toBe(201);
  return pid;
}

export async function liveCheckout(pid: string, amount: number, extra: Record<string, unknown> = {}): Promise<string> {
  const r = await api("POST", "/v1/checkout-sessions", started().s.liveKey, { participant_id: pid, amount, ...extra });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return String((r.body["checkout_session"] as Record<string, unknown>)["id"]);
}

export async function pay(id: string, amount: number, pi = rid("pi")): Promise<{ pi: string; event: Record<string, unknown> }> {
  const event = processorEvent("checkout.session.completed", checkoutSessionObject({ reference: id, amount, paymentIntent: pi }));
  const r = await sendWebhook(started().s.baseUrl, signed(event, SECRET));
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  await waitFor(async () => (await sessionStatus(id)) === "completed", { timeoutMs: 15_000 });
  return { pi, event };
}

/** How many processor reports were dropped for `reason` (processor_events_dropped_total). */
export async function dropped(reason: string): Promise<number> {
  const { payments } = started();
  if (payments.metrics.getSingleMetric("processor_events_dropped_total") === undefined) return 0;
  const text = await payments.metrics.getSingleMetricAsString("processor_events_dropped_total");
  return Number(new RegExp(`^processor_events_dropped_total\\{[^}]*reason="${reason}"[^}]*\\} (\\d+)$`, "m").exec(text)?.[1] ?? 0);
}

/** Sends a signed event and waits until the worker has finished it; answers its recorded outcome. */
export async function outcomeOf(event: Record<string, unknown>): Promise<string> {
  const { env, s } = started();
  expect((await sendWebhook(s.baseUrl, signed(event, SECRET))).status).toBe(200);
  return waitFor(
    async () => {
      const [row] = await env.adminSql<{ status: string; outcome: string | null }[]>`
        select status, outcome from payments.processor_events where event_id = ${String(event["id"])}`;
      return row?.status === "processed" ? String(row.outcome) : false;
    },
    { timeoutMs: 15_000 },
  );
}
