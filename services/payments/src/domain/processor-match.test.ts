// Proves the rule that decides whether a processor's report of a session may act on the stored session.
import { describe, expect, it } from "vitest";
import { mismatchOf, type ReportedSession, type StoredSession } from "./processor-match.ts";

const stored: StoredSession = { livemode: true, processorSessionId: "cs_live_1", currency: "USD", amount: 2_500 };
const paid: ReportedSession = { livemode: true, id: "cs_live_1", currency: "usd", amount: 2_500 };

describe("mismatchOf", () => {
  it("accepts the report of the stored session, whatever the currency's case", () => {
    expect(mismatchOf(stored, paid, true)).toBeUndefined();
    expect(mismatchOf({ ...stored, livemode: false }, { ...paid, livemode: false }, true)).toBeUndefined();
  });

  it("drops a test-mode report of a live session, a live report of a sandbox one, and a report that does not say", () => {
    expect(mismatchOf(stored, { ...paid, livemode: false }, true)).toBe("livemode_mismatch");
    expect(mismatchOf({ ...stored, livemode: false }, paid, true)).toBe("livemode_mismatch");
    expect(mismatchOf(stored, { ...paid, livemode: null }, false)).toBe("livemode_mismatch");
  });

  it("drops a report of another processor session, or of one when none was stored", () => {
    expect(mismatchOf(stored, { ...paid, id: "cs_live_2" }, true)).toBe("session_mismatch");
    expect(mismatchOf(stored, { ...paid, id: "cs_live_2" }, false)).toBe("session_mismatch");
    expect(mismatchOf({ ...stored, processorSessionId: null }, paid, true)).toBe("session_mismatch");
  });

  it("drops a payment in another currency or of another amount, and ignores both for an unpaid ending", () => {
    expect(mismatchOf(stored, { ...paid, currency: "eur" }, true)).toBe("currency_mismatch");
    expect(mismatchOf(stored, { ...paid, currency: null }, true)).toBe("currency_mismatch");
    expect(mismatchOf(stored, { ...paid, amount: 2_499 }, true)).toBe("amount_mismatch");
    expect(mismatchOf(stored, { ...paid, currency: "eur", amount: null }, false)).toBeUndefined();
  });
});
