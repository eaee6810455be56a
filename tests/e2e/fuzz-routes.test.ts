// Proves that no generated input reaches a 5xx on any operation of the OpenAPI document the gateway serves, nor on
// any hosted page: bodies, queries and path parameters derived from each operation's schemas and then broken
// (wrong types, missing fields, huge strings, deep nesting, lone surrogates, U+0000, extreme numbers, odd path
// characters, unknown query parameters) always get the JSON envelope with a known error_code, or a success
// envelope, or for pages HTML, and never a stack trace. Runs are bounded and seeded: FUZZ_SEED and FUZZ_RUNS replay
// or widen them.
import { createHmac } from "node:crypto";
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import fc from "fast-check";
import { ERROR_CODES, PAGE_ROUTES, SCOPES, buildOpenApiDocument, findRoute, isErrorCode, type Scope } from "@treasury/contracts";
import { waitFor } from "@treasury/testing";
import { bodyFor, encodeLoose, HOSTILE_SEGMENTS, hostileString, pathFor, processorEvent, queryFor, type FuzzContext, type Schema } from "./fuzz-inputs.ts";
import { createSamples, startSampleStack, STRIPE_WEBHOOK_SECRET, type SampleStack, type Samples } from "./route-samples.ts";

const SEED = Number(process.env["FUZZ_SEED"] ?? 20_260_301);
const RUNS = Number(process.env["FUZZ_RUNS"] ?? 30);
/** What an answer must never show: a stack frame, a source path, a driver's or the database's own words. */
const INTERNALS_RE =
  /\n\s+at [^\n]+\(|node:internal|node_modules|\/src\/[\w/-]+\.ts|\.ts:\d+:\d+|SQLSTATE|violates [a-z ]*constraint|syntax error at or near|ECONNREFUSED|TypeError|ReferenceError|Cannot read propert/;

let ss: SampleStack;
let samples: Samples;
/** The generators' real values, once the samples exist. */
let inputs: FuzzContext;
let served: { paths: Record<string, Record<string, OpenApiOperation>> };
const keys = { sandboxAll: "", live: "", byScope: {} as Record<string, string> };

interface OpenApiOperation {
  operationId: string;
  parameters?: { name: string; in: "path" | "query"; schema: Schema }[];
  requestBody?: { content: { "application/json": { schema: Schema } } };
  "x-required-scope"?: Scope | null;
}

beforeAll(async () => {
  ss = await startSampleStack();
  keys.sandboxAll = (await ss.s.key({ scopes: [...SCOPES] })).api_key;
  keys.live = ss.s.liveKey;
  for (const scope of SCOPES) keys.byScope[scope] = (await ss.s.key({ scopes: [scope] })).api_key;
  samples = await createSamples(
    async (method, path, body) => {
      const r = await send(ss.s.baseUrl, method, path, {
        key: ss.s.testKey,
        ...(body === undefined ? {} : { body: JSON.stringify(body), contentType: "application/json" }),
      });
      return { status: r.status, body: JSON.parse(r.text) as Record<string, unknown> };
    },
    ss.hookUrl,
    "fuzz",
  );
  inputs = { samples, hookUrl: ss.hookUrl, orgId: ss.s.orgId };
  const doc = await send(ss.s.baseUrl, "GET", "/v1/openapi.json", {});
  served = JSON.parse(doc.text) as typeof served;
}, 120_000);
afterAll(async () => {
  await ss?.stop();
});

async function send(
  base: string,
  method: string,
  path: string,
  opts: { key?: string; body?: string | Uint8Array; contentType?: string; headers?: Record<string, string> },
): Promise<{ status: number; headers: Headers; text: string }> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.key !== undefined) headers["x-api-key"] = opts.key;
  if (opts.contentType !== undefined) headers["content-type"] = opts.contentType;
  const res = await fetch(base + path, { method, headers, body: opts.body ?? null, redirect: "manual" });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

/** A Stripe-Signature header over the exact bytes: `t=<seconds>,v1=<HMAC-SHA256 of "t.body">`. */
function stripeSignature(bytes: string | Uint8Array, at: number): string {
  return `t=${at},v1=${createHmac("sha256", STRIPE_WEBHOOK_SECRET).update(`${at}.`).update(bytes).digest("hex")}`;
}

/**
 * The answer is the JSON envelope (a known error code whose status it carries, or success) with no internals; a
 * route that may answer a file (a statement as CSV) answers a success as that file, with its request id in a header.
 */
function checkAnswer(r: { status: number; headers: Headers; text: string }, what: string, mayAnswerFile = false): void {
  const shown = `${what.slice(0, 600)} → ${r.status} ${r.text.slice(0, 400)}`;
  expect(r.status, shown).toBeLessThan(500);
  if (mayAnswerFile && r.status < 300 && !(r.headers.get("content-type") ?? "").includes("application/json")) {
    // The files of the route table: statements and exports as CSV, the FIRE file as text, the recipient copy as PDF.
    expect(r.headers.get("content-type") ?? "", shown).toMatch(/^(text\/csv|text\/plain|application\/pdf)/);
    expect(r.headers.get("x-request-id"), shown).toMatch(/^req_/);
    expect(INTERNALS_RE.test(r.text), shown).toBe(false);
    return;
  }
  expect(r.headers.get("content-type") ?? "", shown).toContain("application/json");
  expect(INTERNALS_RE.test(r.text), shown).toBe(false);
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(r.text) as Record<string, unknown>;
  } catch {
    throw new Error(`not JSON: ${shown}`);
  }
  expect(body["request_id"], shown).toBe(r.headers.get("x-request-id"));
  if (r.status >= 400) {
    const code = String(body["error_code"]);
    expect(body["success"], shown).toBe(false);
    expect(isErrorCode(code), `unknown error_code: ${shown}`).toBe(true);
    expect(ERROR_CODES[code as keyof typeof ERROR_CODES].status, shown).toBe(r.status);
    expect(typeof body["error"], shown).toBe("string");
  } else {
    expect(body["success"], shown).toBe(true);
  }
}

/** Runs a bounded, seeded property; a failure names the seed that replays it and the answer that broke it. */
async function fuzz<T>(label: string, seed: number, arb: fc.Arbitrary<T>, check: (t: T) => Promise<void>): Promise<void> {
  const details = await fc.check(fc.asyncProperty(arb, check), { seed, numRuns: RUNS, endOnFailure: true });
  if (!details.failed) return;
  const cause = details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance);
  throw new Error(
    `${label}: failed after ${details.numRuns} runs; replay with FUZZ_SEED=${SEED} (this route's seed ${seed}, path ${details.counterexamplePath ?? ""})\n${cause.slice(0, 3_000)}`,
  );
}

/** Every processor event the fuzz got recorded was handled or ignored by the worker: none made it throw. */
async function expectProcessorEventsSettled(): Promise<void> {
  const sql = ss.s.env.adminSql;
  await waitFor(async () => (await sql`select 1 from payments.processor_events where status = 'pending' and last_error is null limit 1`).length === 0, {
    timeoutMs: 20_000,
  });
  expect(await sql`select event_id, type, last_error from payments.processor_events where last_error is not null`).toEqual([]);
}

// ---- the operations ----

/** Every operation of the document the gateway builds, named at collection time; each test reads the served one. */
const OPERATIONS = Object.entries(buildOpenApiDocument("/").paths as Record<string, Record<string, { operationId: string }>>).flatMap(([path, methods]) =>
  Object.entries(methods).map(([method, op]) => ({ path, method: method.toUpperCase(), operationId: op.operationId })),
);

describe("every operation of the OpenAPI document", () => {
  it.each(OPERATIONS.map((o, i) => [`${o.method} ${o.path} (${o.operationId})`, o, i] as const))(
    "%s: never a 5xx, always the envelope",
    async (_name, o, index) => {
      // Proves the operation answers every generated request with the envelope and a status below 500.
      const op = served.paths[o.path]?.[o.method.toLowerCase()];
      if (op === undefined) throw new Error(`the served document lacks ${o.method} ${o.path}`);
      const params = op.parameters ?? [];
      const pathParams = params.filter((p) => p.in === "path").map((p) => p.name);
      const scope = op["x-required-scope"] ?? null;
      const keyChoices = scope === null ? [undefined, keys.sandboxAll] : [keys.sandboxAll, keys.live, keys.byScope[scope] ?? keys.sandboxAll];
      // The processor's webhook is signed over its bytes: most events here carry a valid signature so they reach
      // the event handling, the rest a stale, forged or missing one.
      const isProcessor = o.operationId === "receiveStripeWebhook";
      const body = isProcessor
        ? fc.oneof({ weight: 3, arbitrary: processorEvent(inputs) }, { weight: 1, arbitrary: bodyFor(inputs, undefined) })
        : bodyFor(inputs, op.requestBody?.content["application/json"].schema);
      const request = fc.record({
        path: pathFor(inputs, o.path, pathParams),
        query: queryFor(
          inputs,
          params.filter((p) => p.in === "query"),
        ),
        body: o.method === "GET" ? fc.constant(undefined) : body,
        key: fc.constantFrom(...keyChoices),
        signature: isProcessor
          ? fc.oneof(
              { weight: 3, arbitrary: fc.constant("valid") },
              { weight: 1, arbitrary: fc.constantFrom("stale", "none", "t=1,v1=00", "v1=", "t=abc,v1=zz", "t=99999999999999999999,v1=00") },
            )
          : fc.constant("none"),
      });
      await fuzz(`${o.method} ${o.path}`, SEED + index, request, async (r) => {
        const now = Math.floor(Date.now() / 1000);
        const bytes = r.body?.bytes ?? "";
        const signature = r.signature === "valid" ? stripeSignature(bytes, now) : r.signature === "stale" ? stripeSignature(bytes, now - 3_600) : r.signature;
        const headers: Record<string, string> = signature === "none" ? {} : { "stripe-signature": signature };
        const res = await send(ss.s.baseUrl, o.method, r.path + r.query, {
          ...(r.key === undefined ? {} : { key: r.key }),
          ...(r.body === undefined ? {} : { body: r.body.bytes, ...(r.body.contentType === undefined ? {} : { contentType: r.body.contentType }) }),
          headers,
        });
        const shown = `${o.method} ${(r.path + r.query).slice(0, 300)} ${typeof r.body?.bytes === "string" ? r.body.bytes.slice(0, 300) : "<bytes>"}`;
        checkAnswer(res, shown, findRoute(o.operationId)?.fileResponse === true);
      });
      if (isProcessor) await expectProcessorEventsSettled();
    },
  );
});

describe("hosted pages", () => {
  const FORM_FIELDS = ["amount", "card_number", "reason", "email", "customer_email", "expiry", "cvc", "name"];
  it.each(PAGE_ROUTES.map((p, i) => [`${p.method} ${p.path} (${p.operation})`, p, i] as const))(
    "%s: HTML or a redirect, never a 5xx",
    async (_name, page, index) => {
      // Proves the hosted page answers generated paths, queries and form posts with HTML or a redirect below 500.
      const template = page.path.replace(/:([A-Za-z_]+)/g, "{$1}");
      const params = [...page.path.matchAll(/:([A-Za-z_]+)/g)].map((m) => m[1] ?? "");
      const pageIds: Record<string, string[]> = {
        checkout_id: [samples.pendingCheckoutId, samples.pathIds["checkout_id"] ?? ""],
        session_id: [samples.walletSessionId],
        receipt_id: [samples.pathIds["receipt_id"] ?? ""],
      };
      const segment = (name: string) =>
        fc.oneof({ weight: 2, arbitrary: fc.constantFrom(...(pageIds[name] ?? ["x"])) }, { weight: 3, arbitrary: HOSTILE_SEGMENTS });
      const form = fc.dictionary(
        fc.oneof(fc.constantFrom(...FORM_FIELDS), fc.string({ maxLength: 10 })),
        fc.oneof(fc.constantFrom("12.34", "4242424242424242", "4000000000000002", "-1", "1e308", "0", "NaN", "", "99999999999999"), hostileString),
        { maxKeys: 4 },
      );
      const request = fc.record({ values: fc.tuple(...params.map(segment)), query: queryFor(inputs, []), form });
      await fuzz(`${page.method} ${page.path}`, SEED + 1_000 + index, request, async (r) => {
        const path = params.reduce((p, name, i) => p.replace(`{${name}}`, r.values[i] ?? ""), template) + r.query;
        const body =
          page.method === "GET"
            ? undefined
            : Object.entries(r.form)
                .map(([k, v]) => `${encodeLoose(k)}=${encodeLoose(v)}`)
                .join("&");
        const res = await send(ss.s.altUrl, page.method, path, body === undefined ? {} : { body, contentType: "application/x-www-form-urlencoded" });
        const shown = `${page.method} ${path.slice(0, 300)} ${(body ?? "").slice(0, 300)} → ${res.status} ${res.text.slice(0, 300)}`;
        expect(res.status, shown).toBeLessThan(500);
        expect(INTERNALS_RE.test(res.text), shown).toBe(false);
        if (res.status === 303) expect(res.headers.get("location"), shown).toBeTruthy();
        else if (res.headers.get("content-type")?.includes("application/json")) checkAnswer(res, shown);
        else expect(res.headers.get("content-type") ?? "", shown).toContain("text/html");
      });
    },
  );
});

describe("requests the HTTP parser refuses", () => {
  it("a request line and headers over the limit, and bytes that are not HTTP, get the envelope and a closed connection", async () => {
    // Proves the answers made at the connection, before any request exists, have the envelope of every other answer.
    const raw = (bytes: string) =>
      new Promise<string>((resolve, reject) => {
        const url = new URL(ss.s.baseUrl);
        const socket = net.connect(Number(url.port), url.hostname, () => socket.end(bytes));
        let text = "";
        socket.on("data", (d: Buffer) => (text += d.toString("utf8")));
        socket.on("close", () => resolve(text));
        socket.on("error", reject);
      });
    const cases = [
      { bytes: `GET /v1/participants?x=${"y".repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`, status: 431, code: "headers_too_large" },
      { bytes: `GET /v1/participants HTTP/1.1\r\nHost: x\r\nX-Big: ${"z".repeat(20_000)}\r\n\r\n`, status: 431, code: "headers_too_large" },
      { bytes: "NOT HTTP AT ALL\r\n\r\n", status: 400, code: "malformed_request" },
      { bytes: "GET /v1/participants HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", status: 400, code: "malformed_request" },
    ];
    for (const c of cases) {
      const text = await raw(c.bytes);
      const [head = "", body = ""] = text.split("\r\n\r\n");
      expect(head, c.code).toMatch(new RegExp(`^HTTP/1.1 ${c.status} `));
      expect(head).toMatch(/\r\nService-Version: \d{4}-\d{2}-\d{2}\r\n/);
      const requestId = /\r\nX-Request-Id: (req_[0-9a-f]{32})/.exec(head)?.[1];
      expect(JSON.parse(body)).toMatchObject({ success: false, error_code: c.code, request_id: requestId, error: expect.any(String) });
    }
  });
});
