// What the route fuzz sends: values and whole requests generated from an operation's JSON Schemas with fast-check,
// then broken the ways a hostile client would (wrong types, missing fields, huge strings, deep nesting, lone
// surrogates, U+0000, extreme numbers, odd path characters, unknown query parameters), naming the org's real
// resources (route-samples.ts) often enough to reach them.
import fc from "fast-check";
import type { Samples } from "./route-samples.ts";

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
export type Schema = { [k: string]: unknown };

/** What the generators draw real values from: the org's samples, the webhook receiver, the org. */
export interface FuzzContext {
  samples: Samples;
  hookUrl: string;
  orgId: string;
}

/** A JSON token written as is: numbers JSON.stringify cannot spell (-0, 1e309), or text that is not JSON at all. */
export class Raw {
  constructor(readonly text: string) {}
}
export type Value = Json | Raw | Value[] | { [k: string]: Value };

export function serialize(v: Value | undefined): string {
  if (v instanceof Raw) return v.text;
  if (Array.isArray(v)) return `[${v.map(serialize).join(",")}]`;
  if (v !== null && typeof v === "object")
    return `{${Object.entries(v)
      .map(([k, x]) => `${JSON.stringify(k)}:${serialize(x)}`)
      .join(",")}}`;
  return JSON.stringify(v) ?? "null";
}

const nested = (depth: number, leaf: Value = 1): Value => (depth <= 0 ? leaf : depth % 2 === 0 ? [nested(depth - 1, leaf)] : { a: nested(depth - 1, leaf) });

export const hostileString = fc.oneof(
  fc.constantFrom(
    "",
    " ",
    "\u0000",
    "a\u0000b",
    "\ud800",
    "x\udfffy",
    "\udc00\ud800",
    "\u202e\u200b",
    "💸",
    "NaN",
    "-0",
    "1e308",
    "Infinity",
    "null",
    "true",
    "0x10",
    "<script>alert(1)</script>",
    "' or 1=1 --",
    "../../etc/passwd",
    "%00",
    "\\",
    "\r\n",
    "__proto__",
  ),
  fc.integer({ min: 250, max: 70_000 }).map((n) => "x".repeat(n)),
  fc.string({ unit: "binary", maxLength: 40 }),
);
const hostileNumber = fc.oneof(
  fc.constantFrom<Value>(0, -1, 1.5, 0.1, 2 ** 53, Number.MAX_SAFE_INTEGER + 2, 1e308, -1e308, 5e-324, 100_000_000_001),
  fc.constantFrom("-0", "1e309", "-1e309", "1e308", "-1e-400", "123456789012345678901234567890", "1.0", "100.00", "1E2").map((t) => new Raw(t)),
  fc.double().filter(Number.isFinite),
);
const hostileValue: fc.Arbitrary<Value> = fc.oneof(
  { weight: 3, arbitrary: hostileString },
  { weight: 3, arbitrary: hostileNumber },
  { weight: 1, arbitrary: fc.constantFrom<Value>(null, true, false, [], {}, [[]], ["a", 1, null], { "": "" }) },
  { weight: 1, arbitrary: fc.integer({ min: 20, max: 60 }).map((d) => nested(d)) },
  {
    weight: 1,
    arbitrary: fc.constantFrom('{"__proto__":{"polluted":true}}', '{"constructor":{"prototype":{"polluted":true}}}', "NaN", "undefined").map((t) => new Raw(t)),
  },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<Value> },
);

/** Real ids of the org, by the field names that hold them, so generated bodies also reach existing resources. */
function knownValues(samples: Samples, name: string): string[] {
  const s = samples;
  const p = s.pathIds["participant_id"] ?? "";
  const byField: Record<string, string[]> = {
    participant_id: [p],
    creator_id: [p],
    from_participant_id: [p],
    to_participant_id: [p],
    release_transfer_to_participant_id: [p],
    entity_id: [p],
    owner_id: [s.buyer, p],
    consumer_sub: [s.buyer],
    wallet_id: [s.consumerWalletId, s.creatorWalletId],
    from_wallet_id: [s.consumerWalletId, s.creatorWalletId],
    to_wallet_id: [s.consumerWalletId, s.creatorWalletId],
    checkout_id: [s.pathIds["checkout_id"] ?? "", s.pendingCheckoutId],
    transaction_id: [s.saleTransactionId, s.sharedSpendTransactionId],
    sale_transaction_id: [s.saleTransactionId, s.sharedSpendTransactionId],
    bill_transaction_id: [s.saleTransactionId],
    sale_reference: [s.saleReference],
    original_sale_reference: [s.saleReference],
    receipt_id: [s.pathIds["receipt_id"] ?? ""],
    endpoint_id: [s.endpointId],
    delivery_id: [s.deliveryId],
    bank_line_id: [s.bankLineId],
  };
  return byField[name] ?? [];
}

const DATE_FIELD_RE = /(^|_)(date|as_of|since|until|at)$/;

function stringFor(ctx: FuzzContext, s: Schema, name: string): fc.Arbitrary<string> {
  const known = knownValues(ctx.samples, name);
  const maxLength = Math.min(typeof s["maxLength"] === "number" ? s["maxLength"] : 40, 40);
  const minLength = Math.min(typeof s["minLength"] === "number" ? s["minLength"] : 0, maxLength);
  let base: fc.Arbitrary<string> = fc.string({ minLength, maxLength });
  if (s["format"] === "uuid") base = fc.uuid();
  else if (s["format"] === "email") base = fc.emailAddress();
  else if (s["format"] === "uri" || name.endsWith("url")) base = fc.constantFrom(ctx.hookUrl, "https://example.invalid/return", "http://127.0.0.1:1/x");
  else if (typeof s["pattern"] === "string") base = safePattern(s["pattern"]) ?? base;
  else if (DATE_FIELD_RE.test(name))
    base = fc
      .date({ min: new Date("2000-01-01"), max: new Date("2100-01-01"), noInvalidDate: true })
      .map((d) => d.toISOString().slice(0, name.includes("date") ? 10 : 24));
  return known.length > 0 ? fc.oneof(fc.constantFrom(...known), base) : base;
}

function safePattern(pattern: string): fc.Arbitrary<string> | undefined {
  try {
    return fc.stringMatching(new RegExp(pattern));
  } catch {
    return undefined;
  }
}

function numberFor(s: Schema, integer: boolean): fc.Arbitrary<number> {
  const lower =
    typeof s["exclusiveMinimum"] === "number"
      ? s["exclusiveMinimum"] + (integer ? 1 : Number.EPSILON)
      : typeof s["minimum"] === "number"
        ? s["minimum"]
        : -1_000_000;
  const upper = typeof s["maximum"] === "number" ? s["maximum"] : 1_000_000_000;
  const min = Math.max(integer ? Math.ceil(lower) : lower, Number.MIN_SAFE_INTEGER);
  const max = Math.min(integer ? Math.floor(upper) : upper, Number.MAX_SAFE_INTEGER);
  if (!integer) return fc.double({ min, max, noNaN: true, noDefaultInfinity: true });
  // Mostly small amounts a service will act on; sometimes anywhere in range.
  return fc.oneof({ weight: 3, arbitrary: fc.integer({ min, max: Math.max(min, Math.min(max, 50_000)) }) }, { weight: 1, arbitrary: fc.integer({ min, max }) });
}

/** Values the schema accepts (as far as JSON Schema says: refinements are not in it), with the org's real ids. */
export function valid(ctx: FuzzContext, s: Schema, name: string, depth = 0): fc.Arbitrary<Value> {
  if ("const" in s) return fc.constant(s["const"] as Json);
  if (Array.isArray(s["enum"])) return fc.constantFrom(...(s["enum"] as Json[]));
  const branches = (s["oneOf"] ?? s["anyOf"]) as Schema[] | undefined;
  if (branches) return fc.oneof(...branches.map((b) => valid(ctx, b, name, depth)));
  const type = Array.isArray(s["type"]) ? (s["type"] as string[])[0] : (s["type"] as string | undefined);
  switch (type) {
    case "string":
      return stringFor(ctx, s, name);
    case "integer":
      return numberFor(s, true);
    case "number":
      // JSON Schema "number" is also how paging parameters read from a query string appear.
      return fc.oneof(numberFor(s, true), numberFor(s, false));
    case "boolean":
      return fc.boolean();
    case "null":
      return fc.constant(null);
    case "array": {
      const items = (s["items"] as Schema | undefined) ?? {};
      const minLength = typeof s["minItems"] === "number" ? s["minItems"] : 0;
      const maxLength = Math.max(minLength, Math.min(typeof s["maxItems"] === "number" ? s["maxItems"] : 3, 3));
      return depth > 4 ? fc.constant([]) : fc.array(valid(ctx, items, name, depth + 1), { minLength, maxLength });
    }
    case "object":
      return objectOf(ctx, s, depth);
    default:
      return fc.jsonValue({ maxDepth: 2 }) as fc.Arbitrary<Value>;
  }
}

function objectOf(ctx: FuzzContext, s: Schema, depth: number): fc.Arbitrary<Value> {
  const props = (s["properties"] as Record<string, Schema> | undefined) ?? {};
  const required = (s["required"] as string[] | undefined) ?? [];
  const names = Object.keys(props);
  if (names.length === 0) {
    // A free-form object (metadata, mapping): a few string keys.
    return depth > 4
      ? fc.constant({})
      : (fc.dictionary(fc.string({ maxLength: 12 }), fc.oneof(fc.string({ maxLength: 20 }), fc.integer()), { maxKeys: 3 }) as fc.Arbitrary<Value>);
  }
  const model = Object.fromEntries(names.map((n) => [n, valid(ctx, props[n] ?? {}, n, depth + 1)]));
  return fc.record(model, { requiredKeys: required.filter((r) => names.includes(r)) }) as fc.Arbitrary<Value>;
}

// ---- requests ----

/** A body as bytes on the wire with its Content-Type. */
export interface WireBody {
  bytes: string | Uint8Array;
  contentType: string | undefined;
}

const RAW_BODIES = fc.constantFrom<string | Uint8Array>(
  "",
  "   ",
  "{",
  '{"a":1,"a":2}',
  "\ufeff{}",
  "[]",
  "null",
  '"just a string"',
  "1e309",
  '{"amount": NaN}',
  `{"deep":${"[".repeat(5_000)}${"]".repeat(5_000)}}`,
  new Uint8Array([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]),
  new Uint8Array([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xed, 0xa0, 0x80, 0x22, 0x7d]),
);
const CONTENT_TYPES = fc.oneof(
  { weight: 12, arbitrary: fc.constant("application/json") },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      "application/json; charset=utf-8",
      "Application/JSON",
      "application/json; charset=latin1",
      "text/plain",
      "application/x-www-form-urlencoded",
      "multipart/form-data; boundary=x",
    ),
  },
  { weight: 1, arbitrary: fc.constant(undefined) },
);

/** A body of the operation's shape, then broken in one of the ways a hostile client would. */
export function bodyFor(ctx: FuzzContext, schema: Schema | undefined): fc.Arbitrary<WireBody> {
  const validBody = schema ? valid(ctx, schema, "") : (fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<Value>);
  const props = Object.keys((schema?.["properties"] as Record<string, unknown> | undefined) ?? {});
  const fieldNames = props.length > 0 ? fc.constantFrom(...props) : fc.string({ maxLength: 10 });
  const asObject = (v: Value): Record<string, Value> => (v !== null && typeof v === "object" && !Array.isArray(v) && !(v instanceof Raw) ? { ...v } : {});
  const value: fc.Arbitrary<Value> = fc.oneof(
    { weight: 3, arbitrary: validBody },
    { weight: 5, arbitrary: fc.tuple(validBody, fieldNames, hostileValue).map(([b, k, h]) => ({ ...asObject(b), [k]: h })) },
    { weight: 2, arbitrary: fc.tuple(validBody, fieldNames).map(([b, k]) => Object.fromEntries(Object.entries(asObject(b)).filter(([f]) => f !== k))) },
    {
      weight: 1,
      arbitrary: fc
        .tuple(validBody, fc.dictionary(fc.string({ maxLength: 12 }), hostileValue, { maxKeys: 3 }))
        .map(([b, extra]) => ({ ...extra, ...asObject(b) })),
    },
    { weight: 1, arbitrary: hostileValue },
  );
  return fc.oneof(
    { weight: 9, arbitrary: fc.tuple(value, CONTENT_TYPES).map(([v, ct]) => ({ bytes: serialize(v), contentType: ct })) },
    { weight: 1, arbitrary: RAW_BODIES.map((bytes) => ({ bytes, contentType: "application/json" })) },
  );
}

const PROCESSOR_EVENT_TYPES = [
  "checkout.session.completed",
  "checkout.session.expired",
  "checkout.session.async_payment_succeeded",
  "checkout.session.async_payment_failed",
  "charge.refunded",
  "charge.refund.updated",
  "charge.dispute.created",
  "charge.dispute.closed",
  "refund.created",
  "refund.updated",
  "refund.failed",
  "invoice.paid",
];

/** Card processor events shaped like the real ones, naming the org's checkouts, broken the same ways as bodies. */
export function processorEvent(ctx: FuzzContext): fc.Arbitrary<WireBody> {
  const checkout = fc.constantFrom(ctx.samples.pendingCheckoutId, ctx.samples.pathIds["checkout_id"] ?? "", "00000000-0000-4000-8000-000000000000");
  const object = fc.record(
    {
      id: fc.constantFrom("cs_test_fuzz", "ch_fuzz", "re_fuzz", "dp_fuzz", "pi_fuzz"),
      object: fc.constantFrom("checkout.session", "charge", "refund", "dispute"),
      client_reference_id: checkout,
      metadata: fc.record({ checkout_session_id: checkout, org_id: fc.constantFrom(ctx.orgId, "org_other") }),
      amount_total: fc.oneof(fc.integer({ min: 0, max: 100_000 }), hostileNumber),
      amount: fc.oneof(fc.integer({ min: 0, max: 100_000 }), hostileNumber),
      currency: fc.constantFrom("usd", "eur", ""),
      payment_status: fc.constantFrom("paid", "unpaid", "no_payment_required"),
      status: fc.constantFrom("complete", "expired", "succeeded", "failed", "pending"),
      payment_intent: fc.constantFrom("pi_fuzz", null),
      charge: fc.constantFrom("ch_fuzz", null),
    },
    { requiredKeys: [] },
  );
  const event = fc.record(
    {
      id: fc.oneof(fc.constant("evt_fuzz_fixed"), fc.stringMatching(/^evt_[A-Za-z0-9]{1,24}$/)),
      object: fc.constant("event"),
      type: fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...PROCESSOR_EVENT_TYPES) }, { weight: 1, arbitrary: fc.string({ maxLength: 30 }) }),
      livemode: fc.boolean(),
      created: fc.integer({ min: 0, max: 2_000_000_000 }),
      data: fc.record({ object: fc.oneof({ weight: 4, arbitrary: object as fc.Arbitrary<Value> }, { weight: 1, arbitrary: hostileValue }) }),
    },
    { requiredKeys: ["id", "object", "type", "livemode", "data"] },
  );
  const mutated = fc
    .tuple(event, fc.constantFrom("id", "object", "type", "data", "livemode", "created"), hostileValue)
    .map(([e, k, h]) => ({ ...e, [k]: h }) as Value);
  return fc
    .oneof(
      event.map((e) => e as Value),
      mutated,
    )
    .map((v) => ({ bytes: serialize(v), contentType: "application/json" }));
}

/** Percent-encodes what encodeURIComponent can; a lone surrogate becomes the bytes of one (invalid UTF-8). */
export function encodeLoose(s: string): string {
  try {
    return encodeURIComponent(s);
  } catch {
    return s.replace(/[\ud800-\udfff]/g, "%ED%A0%80").replace(/[^A-Za-z0-9%_.~-]/g, (c) => encodeURIComponent(c));
  }
}

export const HOSTILE_SEGMENTS = fc.oneof(
  fc.constantFrom(
    "%00",
    "%2F",
    "a%2Fb",
    "%2e%2e",
    "..",
    ".",
    "%FF",
    "%ED%A0%80",
    "%E2%80%AE",
    "%25",
    "a%20b",
    "null",
    "-0",
    "1e308",
    "NaN",
    "0",
    "%27%20or%201%3D1--",
    "%3Cscript%3E",
    "00000000-0000-0000-0000-000000000000",
    "txn_",
    "rcpt_x",
    "hold_%00",
  ),
  fc.integer({ min: 150, max: 6_000 }).map((n) => "x".repeat(n)),
  hostileString.map(encodeLoose),
  fc.uuid(),
);

export function pathFor(ctx: FuzzContext, template: string, params: string[]): fc.Arbitrary<string> {
  if (params.length === 0) return fc.constant(template);
  const segment = (name: string) => {
    const known = [ctx.samples.pathIds[name], ...knownValues(ctx.samples, name)]
      .filter((v): v is string => v !== undefined && v !== "")
      .map(encodeURIComponent);
    return known.length > 0 ? fc.oneof({ weight: 2, arbitrary: fc.constantFrom(...known) }, { weight: 3, arbitrary: HOSTILE_SEGMENTS }) : HOSTILE_SEGMENTS;
  };
  return fc.tuple(...params.map(segment)).map((values) => params.reduce((p, name, i) => p.replace(`{${name}}`, values[i] ?? ""), template));
}

export function queryFor(ctx: FuzzContext, params: { name: string; schema: Schema }[]): fc.Arbitrary<string> {
  const declared = params.map(({ name, schema }) =>
    fc.option(
      fc.oneof(
        valid(ctx, schema, name).map((v) => `${encodeURIComponent(name)}=${encodeLoose(typeof v === "string" ? v : serialize(v))}`),
        hostileString.map((h) => `${encodeURIComponent(name)}=${encodeLoose(h)}`),
        fc.tuple(valid(ctx, schema, name), valid(ctx, schema, name)).map(([a, b]) => `${name}=${encodeLoose(String(a))}&${name}=${encodeLoose(String(b))}`),
      ),
      { nil: undefined, freq: 2 },
    ),
  );
  const unknown = fc.array(
    fc.constantFrom(
      "foo=bar",
      "__proto__[x]=1",
      "constructor=1",
      "limit[]=1",
      "a=%00",
      "b=%FF",
      `x=${"y".repeat(3_000)}`,
      "=",
      "&&",
      "limit=1e308",
      "offset=-0",
    ),
    { maxLength: 2 },
  );
  return fc.tuple(fc.tuple(...declared), unknown).map(([d, u]) => {
    const parts = [...d.filter((p): p is string => p !== undefined), ...u];
    return parts.length === 0 ? "" : `?${parts.join("&")}`;
  });
}
