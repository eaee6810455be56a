// Proves the shared contracts' rules: money helpers are exact, and the route table matches docs/api.md, Scopes.
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { AMOUNT_MAX_CENTS, PositiveCents, cents, parseCents, percentToBps, shareOf } from "./money.ts";
import { ROUTES, PAGE_ROUTES } from "./routes.ts";
import { ERROR_CODES } from "./errors.ts";
import { API_KEY_RE, environmentOfKey, hasScope } from "./auth.ts";
import { newRequestId, REQUEST_ID_RE } from "./ids.ts";

describe("money", () => {
  it("rounds percent × 100 to basis points instead of flooring the float (2.3 % is 230 bps)", () => {
    expect(percentToBps(2.3)).toBe(230);
    expect(percentToBps(80)).toBe(8000);
    expect(percentToBps(33.33)).toBe(3333);
    expect(() => percentToBps(100.01)).toThrow();
  });

  it("splits floor(amount × bps / 10000) exactly, so a share plus its remainder is the whole", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: AMOUNT_MAX_CENTS }), fc.integer({ min: 0, max: 10_000 }), (amount, bps) => {
        const share = shareOf(cents(amount), bps);
        expect(Number.isSafeInteger(share)).toBe(true);
        expect(share).toBeLessThanOrEqual(amount);
        expect(share).toBe(Number((BigInt(amount) * BigInt(bps)) / 10_000n));
      }),
    );
  });

  it("parses database strings into Cents once and refuses anything that is not an integer", () => {
    expect(parseCents("-42")).toBe(-42);
    expect(() => parseCents("1.5")).toThrow();
    expect(() => parseCents("9007199254740993")).toThrow();
    expect(PositiveCents.safeParse(AMOUNT_MAX_CENTS + 1).error?.issues[0]).toMatchObject({ params: { error_code: "amount_too_large" } });
    for (const bad of [0, -1, 1.5, "10", null]) expect(PositiveCents.safeParse(bad).success).toBe(false);
  });
});

describe("route table", () => {
  it("has one operation name per route and a known owning service", () => {
    const ops = [...ROUTES, ...PAGE_ROUTES].map((r) => r.operation);
    expect(new Set(ops).size).toBe(ops.length);
  });

  it("requires read on every GET but the risk and tax scopes', and the scopes of docs/api.md, Scopes on writes", () => {
    const keyless = new Set(["/v1/receipts/jwks", "/v1/webhooks/jwks"]);
    const readScope = (path: string) =>
      keyless.has(path)
        ? null
        : path.startsWith("/v1/fraud/")
          ? "risk"
          : path.startsWith("/v1/tax/")
            ? "accounting"
            : path.endsWith("/tax-profile")
              ? "creators"
              : "read";
    for (const r of ROUTES.filter((x) => x.method === "GET")) expect([r.path, r.scope]).toEqual([r.path, readScope(r.path)]);
    const scopeOf = (path: string) => ROUTES.find((r) => r.method === "POST" && r.path === path)?.scope;
    expect(scopeOf("/v1/participants")).toBe("creators");
    expect(scopeOf("/v1/kyc/business")).toBe("creators");
    expect(scopeOf("/v1/payouts")).toBe("payouts");
    expect(scopeOf("/v1/webhooks")).toBe("webhooks");
    expect(scopeOf("/v1/record-sale")).toBe("accounting");
    expect(scopeOf("/v1/import-transactions")).toBe("accounting");
    expect(scopeOf("/v1/receipts/verify")).toBe("read");
    expect(scopeOf("/v1/generate-report")).toBe("read");
    for (const p of ["/v1/fraud/policies", "/v1/fraud/evaluations", "/v1/configure-alerts"]) expect(scopeOf(p), p).toBe("risk");
    for (const p of ["/v1/tax/documents/generate", "/v1/tax/documents/:document_id/mark-filed", "/v1/tax/documents/:document_id/correct"])
      expect(scopeOf(p), p).toBe("accounting");
    expect(ROUTES.filter((r) => r.method === "DELETE").map((r) => [r.path, r.scope])).toEqual([["/v1/fraud/policies/:policy_id", "risk"]]);
    for (const p of ["/v1/checkout-sessions", "/v1/refunds", "/v1/transfers", "/v1/holds", "/v1/wallet-sessions", "/v1/wallets/shared-spend"])
      expect(scopeOf(p), p).toBe("payments");
  });

  it("maps every error code to a 4xx/5xx status", () => {
    for (const [code, { status }] of Object.entries(ERROR_CODES)) expect(status >= 400 && status < 600, code).toBe(true);
  });
});

describe("keys and ids", () => {
  it("reads the environment from the key prefix, legacy prefixes included", () => {
    expect(environmentOfKey(`slk_test_${"a".repeat(32)}`)).toBe("sandbox");
    expect(environmentOfKey(`sk_live_${"a".repeat(32)}`)).toBe("live");
    expect(environmentOfKey(`slk_prod_${"a".repeat(32)}`)).toBeNull();
    expect(API_KEY_RE.test("slk_test_short")).toBe(false);
    expect(hasScope(null, "payouts")).toBe(true);
    expect(hasScope(["read"], "payouts")).toBe(false);
  });

  it("makes distinct req_ + 32 hex request ids", () => {
    const ids = new Set(Array.from({ length: 2000 }, () => newRequestId()));
    expect(ids.size).toBe(2000);
    for (const id of ids) expect(id).toMatch(REQUEST_ID_RE);
  });
});
