// Proves the client's request handling on a fake fetch: one replay key per logical call kept across retries,
// retries only on 429/503/504 (and only where repeating is safe), Retry-After as a floor under jittered backoff,
// typed errors by error_code, paged iterators, and one method for every operation of the OpenAPI document.
import { describe, expect, expectTypeOf, it } from "vitest";
import { createClient, type ClientOptions } from "./index.ts";
import { OPERATIONS, type OperationId } from "./generated/operations.ts";
import { NOT_OFFERED, RESOURCES } from "./resources.ts";
import { TreasuryConnectionError, TreasuryError } from "./errors.ts";
import { errorBody, fakeFetch, recordingSleep, type Scripted } from "./test-support/fake-fetch.ts";

function clientWith(answers: Parameters<typeof fakeFetch>[0], opts: Partial<ClientOptions> = {}) {
  const f = fakeFetch(answers);
  const s = recordingSleep();
  let n = 0;
  const client = createClient({
    apiKey: "slk_test_x",
    baseUrl: "http://api.test/",
    fetch: f.fetch,
    sleep: s.sleep,
    random: () => 0.5,
    newIdempotencyKey: () => `idk_${++n}`,
    ...opts,
  });
  return { client, sent: f.sent, waits: s.waits };
}

const ok = (body: Record<string, unknown> = {}): Scripted => ({ status: 200, body: { success: true, request_id: "req_1", ...body } });

describe("requests", () => {
  it("puts path parameters, query, key and version where the operation says", async () => {
    const { client, sent } = clientWith([ok({ entries: [] }), ok()]);
    await client.wallets.entries("w/1", { limit: 5, offset: 10 });
    await client.wallets.topUp("w1", { amount: 2_500, reference_id: "top_1" });
    expect(sent[0]).toMatchObject({ method: "GET", url: "http://api.test/v1/wallets/w%2F1/entries?limit=5&offset=10", body: undefined });
    expect(sent[0]!.headers).toMatchObject({ "x-api-key": "slk_test_x", "service-version": "2026-03-01" });
    expect(sent[1]).toMatchObject({ method: "POST", url: "http://api.test/v1/wallets/w1/topups", body: { amount: 2_500, reference_id: "top_1" } });
    expect(sent[1]!.headers["content-type"]).toBe("application/json");
  });

  it("types arguments from the OpenAPI document", () => {
    const { client } = clientWith([]);
    expectTypeOf(client.wallets.topUp).parameter(0).toEqualTypeOf<string>();
    expectTypeOf(client.wallets.topUp).parameter(1).toHaveProperty("reference_id").toEqualTypeOf<string>();
    // An idempotency_key operation's key is optional: the client makes one.
    expectTypeOf(client.refunds.create).parameter(0).toHaveProperty("idempotency_key").toEqualTypeOf<string | undefined>();
    // @ts-expect-error a top-up needs its wallet id and body
    void (() => client.wallets.topUp({ amount: 1, reference_id: "r" }));
    // Answers are the envelope; a call names the fields it relies on.
    expectTypeOf(client.payouts.get<{ payout: { id: string } }>)
      .returns.resolves.toHaveProperty("payout")
      .toEqualTypeOf<{ id: string }>();
    expectTypeOf(client.payouts.get).returns.resolves.toHaveProperty("request_id").toEqualTypeOf<string>();
    // A body whose fields are all optional may be left out.
    void (() => client.sandbox.completeCheckout("cs_1"));
  });
});

describe("idempotency across retries", () => {
  it("makes one key per logical call and sends it on every retry", async () => {
    const { client, sent } = clientWith([{ status: 504, body: errorBody("service_timeout") }, "network_error", ok({ checkout_session: {} }), ok()]);
    await client.checkouts.create({ participant_id: "p", amount: 2_500 });
    await client.checkouts.create({ participant_id: "p", amount: 2_500 });
    expect(sent.map((r) => r.body?.["idempotency_key"])).toEqual(["idk_1", "idk_1", "idk_1", "idk_2"]);
  });

  it("leaves a refund's key to the server, which derives the same one from the same request on every retry", async () => {
    const { client, sent } = clientWith([{ status: 504, body: errorBody("service_timeout") }, ok({ refund: {}, idempotent: true })]);
    await client.refunds.create({ original_sale_reference: "checkout:cs", amount: 500, reason: "damaged" });
    expect(sent.map((r) => r.body)).toEqual([
      { original_sale_reference: "checkout:cs", amount: 500, reason: "damaged" },
      { original_sale_reference: "checkout:cs", amount: 500, reason: "damaged" },
    ]);
  });

  it("keeps the caller's key, from the body or the call options", async () => {
    const { client, sent } = clientWith([{ status: 503, body: errorBody("service_unavailable") }, ok(), ok()]);
    await client.refunds.create({ original_sale_reference: "s", amount: 1, reason: "r", idempotency_key: "mine" });
    await client.checkouts.create({ participant_id: "p", amount: 100 }, { idempotencyKey: "opt" });
    expect(sent.map((r) => r.body?.["idempotency_key"])).toEqual(["mine", "mine", "opt"]);
  });

  it("answers a reference_id 409 after an unknown outcome as the replay it is", async () => {
    const existing = { id: "po_1", status: "paid" };
    const { client } = clientWith([
      { status: 504, body: errorBody("service_timeout") },
      { status: 409, body: errorBody("duplicate_reference_id", { payout: existing, existing_transaction_id: "txn_1" }) },
    ]);
    const res = await client.payouts.create({ participant_id: "p", amount: 100, reference_id: "po-ref" });
    expect(res).toMatchObject({ success: true, idempotent: true, error_code: "duplicate_reference_id", payout: existing });
  });

  it("raises that 409 when no earlier attempt could have done the work", async () => {
    const { client } = clientWith([{ status: 409, body: errorBody("duplicate_reference_id", { payout: {} }) }]);
    const e = await client.payouts.create({ participant_id: "p", amount: 100, reference_id: "r" }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(TreasuryError);
    expect((e as TreasuryError).code).toBe("duplicate_reference_id");
  });
});

describe("retries", () => {
  it("retries 429, 503 and 504 with jittered exponential backoff, up to maxAttempts", async () => {
    const { client, sent, waits } = clientWith([
      { status: 429, body: errorBody("rate_limited") },
      { status: 503, body: errorBody("service_unavailable") },
      { status: 504, body: errorBody("service_timeout") },
      { status: 504, body: errorBody("service_timeout") },
    ]);
    const e = (await client.participants.get("p1").catch((x: unknown) => x)) as TreasuryError;
    expect(sent).toHaveLength(4);
    // base 250 ms doubling; random 0.5 puts each wait at three quarters of its step.
    expect(waits).toEqual([187.5, 375, 750]);
    expect([e.code, e.status, e.family, e.attempts]).toEqual(["service_timeout", 504, "unavailable", 4]);
  });

  it("waits at least Retry-After, in seconds or as a date, and gives up on one beyond the bound", async () => {
    const now = Date.parse("2026-03-01T00:00:00Z");
    const { client, waits, sent } = clientWith(
      [
        { status: 429, body: errorBody("rate_limited"), headers: { "retry-after": "3" } },
        { status: 503, body: errorBody("maintenance"), headers: { "retry-after": new Date(now + 5_000).toUTCString() } },
        ok(),
        { status: 503, body: errorBody("maintenance", { retry_after: 3600 }), headers: { "retry-after": "3600" } },
      ],
      { now: () => now },
    );
    await client.participants.list();
    expect(waits).toEqual([3_000, 5_000]);
    const e = (await client.participants.list().catch((x: unknown) => x)) as TreasuryError;
    expect([sent.length, e.code, e.retryAfter]).toEqual([4, "maintenance", 3600]);
  });

  it("does not repeat an unkeyed write whose outcome is unknown, nor a 4xx", async () => {
    const { client, sent } = clientWith([
      { status: 504, body: errorBody("service_timeout") },
      "network_error",
      { status: 400, body: errorBody("validation_error") },
    ]);
    await expect(client.webhooks.manage({ action: "create", url: "https://x.test" })).rejects.toMatchObject({ code: "service_timeout", attempts: 1 });
    await expect(client.fraud.createPolicy({} as never)).rejects.toBeInstanceOf(TreasuryConnectionError);
    await expect(client.participants.list()).rejects.toMatchObject({ code: "validation_error", family: "invalid_request" });
    expect(sent).toHaveLength(3);
  });

  it("still retries a rate-limited unkeyed write: nothing ran", async () => {
    const { client, sent } = clientWith([{ status: 429, body: errorBody("rate_limited") }, ok({ data: {} })]);
    await client.webhooks.manage({ action: "list" });
    expect(sent).toHaveLength(2);
  });

  it("reports a lost connection with the key to retry with", async () => {
    const { client } = clientWith(["network_error", "network_error"], { retry: { maxAttempts: 2 } });
    const e = (await client.refundRequests.create({ sale_reference: "s", reason: "r" }).catch((x: unknown) => x)) as TreasuryConnectionError;
    expect(e).toBeInstanceOf(TreasuryConnectionError);
    expect([e.attempts, e.idempotencyKey]).toEqual([2, "idk_1"]);
  });
});

describe("errors", () => {
  it("raises the envelope as a TreasuryError narrowed by code", async () => {
    const { client } = clientWith([{ status: 422, body: errorBody("insufficient_balance", { hint: "top up", details: [{ path: "amount", message: "m" }] }) }]);
    const e = (await client.payouts.create({ participant_id: "p", amount: 1, reference_id: "r" }).catch((x: unknown) => x)) as TreasuryError;
    expect(e.is("insufficient_balance")).toBe(true);
    expect([e.status, e.family, e.hint, e.requestId, e.details]).toEqual([422, "unprocessable", "top up", "req_e", [{ path: "amount", message: "m" }]]);
    expectTypeOf(e.code).toExtend<string>();
    // @ts-expect-error not a code the API answers
    void e.is("no_such_code");
  });

  it("keeps the replay key on an error whose outcome is unknown, to learn it later", async () => {
    const { client } = clientWith([{ status: 504, body: errorBody("service_timeout") }], { retry: { maxAttempts: 1 } });
    const e = (await client.checkouts.create({ participant_id: "p", amount: 1 }).catch((x: unknown) => x)) as TreasuryError;
    expect([e.code, e.idempotencyKey]).toEqual(["service_timeout", "idk_1"]);
  });

  it("reports a failure without an envelope as internal_error", async () => {
    const { client } = clientWith([{ status: 502, body: { nope: true } }]);
    await expect(client.health.check()).rejects.toMatchObject({ code: "internal_error", status: 502, family: "server" });
  });
});

describe("files", () => {
  it("answers a body sent outside the envelope (a CSV statement) as a file", async () => {
    const fetchCsv = (async () =>
      new Response("date,amount\n2026-03-01,1000\n", { status: 200, headers: { "content-type": "text/csv", "x-request-id": "req_csv" } })) as typeof fetch;
    const client = createClient({ apiKey: "k", baseUrl: "http://api.test", fetch: fetchCsv });
    const res = await client.payouts.statement("po_1", { format: "csv" });
    expect(res).toEqual({ success: true, request_id: "req_csv", file: { content_type: "text/csv", content: "date,amount\n2026-03-01,1000\n" } });
  });
});

describe("paged lists", () => {
  it("iterates limit/offset lists page by page up to the total", async () => {
    const page = (items: number[], offset: number) => ok({ holds: items.map((id) => ({ id })), total: 5, limit: 2, offset, count: items.length });
    const { client, sent } = clientWith([page([1, 2], 0), page([3, 4], 2), page([5], 4)]);
    const ids: unknown[] = [];
    for await (const h of client.holds.list.all<{ id: number }>({ limit: 2 })) ids.push(h.id);
    expect(ids).toEqual([1, 2, 3, 4, 5]);
    expect(sent.map((r) => new URL(r.url).search)).toEqual(["?limit=2&offset=0", "?limit=2&offset=2", "?limit=2&offset=4"]);
  });

  it("iterates page/per_page lists up to total_pages, and a path parameter's list", async () => {
    const { client, sent } = clientWith((req) => {
      const url = new URL(req.url);
      if (url.pathname.endsWith("/entries")) return ok({ entries: [], total: 0, limit: 25, offset: 0 });
      const p = Number(url.searchParams.get("page"));
      return ok({ transactions: [{ p }], pagination: { total: 2, page: p, per_page: 1, total_pages: 2 } });
    });
    const pages: unknown[] = [];
    for await (const t of client.transactions.list.all({ per_page: 1 })) pages.push(t["p"]);
    for await (const _ of client.wallets.entries.all("w1")) pages.push("none expected");
    expect(pages).toEqual([1, 2]);
    expect(sent.at(-1)!.url).toBe("http://api.test/v1/wallets/w1/entries?offset=0");
  });
});

describe("coverage", () => {
  it("has exactly one method for every operation of the OpenAPI document", () => {
    const named = Object.values(RESOURCES).flatMap((g) => Object.values(g) as OperationId[]);
    expect(new Set(named).size).toBe(named.length);
    expect([...named, ...NOT_OFFERED].sort()).toEqual((Object.keys(OPERATIONS) as OperationId[]).sort());
  });
});
