// Proves the pure rules behind `admin find` and `admin audit list`: which kind an id typed by an operator is, which ids a row names (references included), trace ids from traceparent, and the --since forms.
import { describe, expect, it } from "vitest";
import { newId, newRequestId, newUuid } from "@treasury/contracts";
import { parseLimit, parseSince } from "../../scripts/admin/audit.ts";
import { classify, idsInRow, traceIdOf } from "@treasury/service-kit/operator-client";

describe("classify", () => {
  it("recognises every generated id by its prefix, UUIDs, request ids, and leaves the rest to participants and sales", () => {
    // Proves each kind the platform hands out maps to its lookup, and that look-alikes do not.
    expect(classify(newId("txn"))).toEqual(["transaction"]);
    expect(classify(newId("po"))).toEqual(["payout"]);
    expect(classify(newId("re"))).toEqual(["refund"]);
    expect(classify(newId("rr"))).toEqual(["refund_request"]);
    expect(classify(newId("rcpt"))).toEqual(["receipt"]);
    expect(classify(newId("hold"))).toEqual(["hold"]);
    expect(classify(newId("rel"))).toEqual(["release"]);
    expect(classify(newId("evt"))).toEqual(["event"]);
    expect(classify(newId("whd"))).toEqual(["delivery"]);
    expect(classify(newId("kycs"))).toEqual(["kyc_submission"]);
    expect(classify(newId("org"))).toEqual(["org"]);
    expect(classify(newId("key"))).toEqual(["api_key"]);
    expect(classify(newRequestId())).toEqual(["request"]);
    expect(classify(newUuid())).toEqual(["uuid"]);
    expect(classify(newUuid().toUpperCase())).toEqual(["uuid"]);
    // A client's ids that merely start like ours are participants or sale references.
    expect(classify("po_ref_march")).toEqual(["participant", "sale"]);
    expect(classify("creator_42")).toEqual(["participant", "sale"]);
    expect(classify("checkout:not-a-uuid")).toEqual(["participant", "sale"]);
  });
});

describe("idsInRow", () => {
  it("finds ids in columns, inside references and nested JSON, and client ids by their column, with the row's org", () => {
    // Proves the links the walk follows, and that it invents none from look-alike text.
    const checkout = newUuid();
    const payout = newId("po");
    const txn = newId("txn");
    const org = newId("org");
    const found = idsInRow({
      org_id: org,
      livemode: false,
      ledger_reference: `checkout:${checkout}`,
      reference_id: `payout:${payout}:settle`,
      result: { transaction_id: txn, note: "po_short is not an id" },
      participant_id: "creator_1",
      sale_reference: `checkout:${checkout}`,
      created_at: new Date(),
    });
    const scope = { orgId: org, livemode: false };
    expect(found).toEqual(
      expect.arrayContaining([
        { kind: "uuid", id: checkout, scope },
        { kind: "payout", id: payout, scope },
        { kind: "transaction", id: txn, scope },
        { kind: "participant", id: "creator_1", scope },
        { kind: "sale", id: `checkout:${checkout}`, scope },
      ]),
    );
    expect(found.map((n) => n.id)).not.toContain("po_short");
    expect(found).toContainEqual({ kind: "org", id: org, scope });
  });
});

describe("traceIdOf and --since", () => {
  it("reads W3C traceparents and ISO or relative times, and refuses anything else", () => {
    // Proves the trace id shown for an event and the audit filters' parsing.
    expect(traceIdOf("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")).toBe("4bf92f3577b34da6a3ce929d0e0e4736");
    expect(traceIdOf("garbage")).toBeUndefined();
    expect(traceIdOf(undefined)).toBeUndefined();
    const now = new Date("2026-03-02T12:00:00Z");
    expect(parseSince("90m", now)).toEqual(new Date("2026-03-02T10:30:00Z"));
    expect(parseSince("2d", now)).toEqual(new Date("2026-02-28T12:00:00Z"));
    expect(parseSince("2026-03-01", now)).toEqual(new Date("2026-03-01T00:00:00Z"));
    expect(parseSince("2026-03-01T08:15:00Z", now)).toEqual(new Date("2026-03-01T08:15:00Z"));
    expect(parseSince(undefined, now)).toBeUndefined();
    for (const bad of ["yesterday", "3w", "2026-13-45", "1h; drop table"]) expect(() => parseSince(bad, now), bad).toThrow(/--since/);
    expect(parseLimit(undefined, 1000, 100)).toBe(100);
    expect(() => parseLimit("1001", 1000, 100)).toThrow(/--limit/);
    expect(() => parseLimit("2.5", 1000, 100)).toThrow(/--limit/);
  });
});
