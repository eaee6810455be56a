import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { PostRequest, SYSTEM_ACCOUNT_TYPES } from "@treasury/contracts";
import { canonicalJson, canonicalPostRequest, postRequestHash, postRequestHashWithoutDate, requestHash } from "./canonical.ts";

/** The first implementation, kept as the reference: stored request hashes were computed with it. */
function reference(value: unknown): string {
  if (value === null || typeof value !== "object") {
    if (typeof value === "number" && !Number.isFinite(value)) throw new TypeError("non-finite number in canonical JSON");
    return JSON.stringify(value) ?? "null";
  }
  if (Array.isArray(value)) return `[${value.map((v: unknown) => reference(v === undefined ? null : v)).join(",")}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${reference(v)}`).join(",")}}`;
}

describe("canonicalJson", () => {
  it("is the reference output for any JSON value (stored idempotency hashes stay valid)", () => {
    // Proves the faster implementation changes no hash: a replay after an upgrade still matches its claim.
    fc.assert(
      fc.property(fc.jsonValue(), (v) => canonicalJson(v) === reference(v)),
      { numRuns: 2000 },
    );
  });

  it("sorts keys, drops undefined members and pins a known hash", () => {
    const req = {
      reference_id: "r-1",
      org_id: "org_1",
      livemode: false,
      kind: "transfer",
      postings: [{ debit: { wallet_id: "a" }, credit: { system: "platform_revenue", entity_id: undefined }, amount: 5 }],
      holds_create: [],
      metadata: { é: "ü\u2028", b: [1, null, true, 2.5e-7] },
    };
    expect(canonicalJson(req)).toBe(reference(req));
    expect(requestHash(req)).toBe("04ec53971e77d7d21b0f002fa53a1db40f22a0a146c3f4a2d315c9641b10cf8b");
    expect(() => canonicalJson({ a: Number.NaN })).toThrow(TypeError);
  });

  it("canonicalPostRequest is canonicalJson for any posting request", () => {
    // Proves the posting hot path hashes exactly what the generic canonical form hashes.
    const ref = fc.oneof(
      fc.uuid().map((wallet_id) => ({ wallet_id })),
      fc.constantFrom("creator-1", "p_2").map((participant_id) => ({ participant_id })),
      fc.record(
        { system: fc.constantFrom(...SYSTEM_ACCOUNT_TYPES), entity_id: fc.option(fc.string({ minLength: 1, maxLength: 8 }), { nil: undefined }) },
        { requiredKeys: ["system"] },
      ),
    );
    const amount = fc.integer({ min: 1, max: 1_000_000 });
    const input = fc.record(
      {
        org_id: fc.string({ minLength: 1, maxLength: 12 }),
        livemode: fc.boolean(),
        kind: fc.constantFrom("transfer", "sale", "wallet_topup"),
        reference_id: fc.stringMatching(/^[a-z0-9:_-]{1,20}$/),
        postings: fc.array(fc.record({ debit: ref, credit: ref, amount }), { maxLength: 4 }),
        preconditions: fc.array(fc.record({ wallet: fc.uuid().map((wallet_id) => ({ wallet_id })), available_gte: fc.nat() }), { maxLength: 2 }),
        holds_create: fc.array(
          fc.record(
            { wallet: fc.uuid().map((wallet_id) => ({ wallet_id })), amount, reference_id: fc.constant("h-1") },
            { requiredKeys: ["wallet", "amount"] },
          ),
          { maxLength: 2 },
        ),
        holds_release: fc.array(fc.string({ minLength: 1, maxLength: 8 }), { maxLength: 2 }),
        amount: fc.nat(),
        description: fc.string({ maxLength: 20 }),
        metadata: fc.dictionary(fc.string({ maxLength: 6 }), fc.jsonValue({ maxDepth: 2 })),
        result_extra: fc.dictionary(fc.string({ maxLength: 6 }), fc.jsonValue({ maxDepth: 2 })),
        sale: fc.record({ sale_reference: fc.constant("s-1"), gross: fc.nat(), creator_amount: fc.nat(), platform_amount: fc.nat() }),
        effective_date: fc
          .date({ min: new Date("2000-01-01T00:00:00Z"), max: new Date("2099-12-31T00:00:00Z"), noInvalidDate: true })
          .chain((d) => fc.constantFrom(d.toISOString(), d.toISOString().slice(0, 10))),
      },
      { requiredKeys: ["org_id", "livemode", "kind", "reference_id"] },
    );
    fc.assert(
      fc.property(input, (raw) => {
        const parsed = PostRequest.safeParse(raw);
        if (!parsed.success) return true;
        return canonicalPostRequest(parsed.data) === canonicalJson(parsed.data);
      }),
      { numRuns: 3000 },
    );
  });

  it("a request with an effective_date hashes it, and its hash without the date is the one stored before", () => {
    // Proves two requests differing only in their accounting date conflict, while a replay of a transaction
    // stored before the date was hashed still matches (postRequestHashWithoutDate).
    const base = PostRequest.parse({
      org_id: "org_1",
      livemode: false,
      kind: "expense",
      reference_id: "exp-1",
      postings: [{ debit: { system: "expense" }, credit: { system: "platform_cash" }, amount: 500 }],
    });
    const dated = { ...base, effective_date: "2026-03-01" };
    expect(postRequestHash(dated)).toBe(requestHash(dated));
    expect(postRequestHash(dated)).not.toBe(postRequestHash({ ...base, effective_date: "2026-03-02" }));
    expect(postRequestHash(dated)).not.toBe(postRequestHash(base));
    expect(postRequestHashWithoutDate(dated)).toBe(postRequestHash(base));
    expect(postRequestHashWithoutDate(base)).toBeUndefined();
  });
});
