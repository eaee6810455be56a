// Proves the pure posting arithmetic: entries and balance_after per posting, balanced totals, and that a
// broken invariant (unbalanced entries, unknown account, self-posting) crashes instead of answering.
import fc from "fast-check";
import { cents } from "@treasury/contracts";
import { describe, expect, it } from "vitest";
import { canonicalJson, requestHash } from "./canonical.ts";
import { assertBalanced, InvariantViolation, planPostings, walletStateOk, type AccountState } from "./posting.ts";

const accounts = new Map<string, AccountState>([
  ["w1", { id: "w1", normal: "credit", isWallet: true, balance: 100, held: 30 }],
  ["w2", { id: "w2", normal: "credit", isWallet: true, balance: 0, held: 0 }],
  ["cash", { id: "cash", normal: "debit", isWallet: false, balance: 0, held: 0 }],
  ["rev", { id: "rev", normal: "credit", isWallet: false, balance: 0, held: 0 }],
]);

describe("planPostings", () => {
  it("writes a debit and a credit per posting with exact wallet balance_after", () => {
    // Proves entries follow postings in order and wallets' running balances are exact.
    const plan = planPostings(
      [
        { debit: "w1", credit: "w2", amount: cents(60) },
        { debit: "cash", credit: "w2", amount: cents(5) },
        { debit: "w2", credit: "rev", amount: cents(10) },
      ],
      accounts,
    );
    expect(plan.entries).toEqual([
      { account_id: "w1", entry_type: "debit", amount: 60, balance_after: 40 },
      { account_id: "w2", entry_type: "credit", amount: 60, balance_after: 60 },
      { account_id: "cash", entry_type: "debit", amount: 5, balance_after: null },
      { account_id: "w2", entry_type: "credit", amount: 5, balance_after: 65 },
      { account_id: "w2", entry_type: "debit", amount: 10, balance_after: 55 },
      { account_id: "rev", entry_type: "credit", amount: 10, balance_after: null },
    ]);
    expect(plan.wallets.get("w1")).toMatchObject({ balance: 40, held: 30 });
    expect(plan.systemDeltas).toEqual(
      new Map([
        ["cash", 5],
        ["rev", 10],
      ]),
    );
    // The input map is untouched: the use case decides what to store.
    expect(accounts.get("w1")?.balance).toBe(100);
    // w1 now has 40 with 30 held: still a storable state; 20 held over 10 would not be.
    expect(walletStateOk({ balance: 40, held: 30 })).toBe(true);
    expect(walletStateOk({ balance: 10, held: 20 })).toBe(false);
    expect(walletStateOk({ balance: -1, held: 0 })).toBe(false);
  });

  it("crashes on invariant violations rather than answering a client error", () => {
    // Proves unbalanced entries, unresolved accounts and self-postings are bugs that throw InvariantViolation.
    expect(() =>
      assertBalanced([
        { entry_type: "debit", amount: cents(5) },
        { entry_type: "credit", amount: cents(4) },
      ]),
    ).toThrow(InvariantViolation);
    expect(() => planPostings([{ debit: "nope", credit: "w2", amount: cents(1) }], accounts)).toThrow(InvariantViolation);
    expect(() => planPostings([{ debit: "w1", credit: "w1", amount: cents(1) }], accounts)).toThrow(InvariantViolation);
    expect(() => planPostings([{ debit: "w1", credit: "w2", amount: cents(0) }], accounts)).toThrow(InvariantViolation);
  });

  it("keeps debits equal to credits and money conserved for any postings", () => {
    // Proves, for random postings, that totals balance and the net of all normal-side deltas is zero.
    const ids = ["w1", "w2", "cash", "rev"];
    const posting = fc
      .record({ d: fc.constantFrom(...ids), c: fc.constantFrom(...ids), amount: fc.integer({ min: 1, max: 1_000_000 }) })
      .filter((p) => p.d !== p.c)
      .map((p) => ({ debit: p.d, credit: p.c, amount: cents(p.amount) }));
    fc.assert(
      fc.property(fc.array(posting, { maxLength: 30 }), (postings) => {
        const plan = planPostings(postings, accounts);
        expect(plan.entries).toHaveLength(postings.length * 2);
        assertBalanced(plan.entries);
        // Debit-normal deltas minus credit-normal deltas (the accounting equation) net to zero.
        let net = 0;
        for (const [id, st] of plan.wallets) net -= st.balance - (accounts.get(id)?.balance ?? 0);
        net += plan.systemDeltas.get("cash") ?? 0;
        net -= plan.systemDeltas.get("rev") ?? 0;
        expect(net).toBe(0);
      }),
    );
  });
});

describe("canonical request hash", () => {
  it("ignores key order and undefined members but not values", () => {
    // Proves replays hash equal however a client orders keys, and any changed value changes the hash.
    expect(canonicalJson({ b: 1, a: { d: [1, { y: 2, x: 1 }], c: undefined } })).toBe('{"a":{"d":[1,{"x":1,"y":2}]},"b":1}');
    expect(requestHash({ a: 1, b: "x" })).toBe(requestHash({ b: "x", a: 1 }));
    expect(requestHash({ a: 1 })).not.toBe(requestHash({ a: 2 }));
    expect(requestHash({ a: 1 })).toMatch(/^[0-9a-f]{64}$/);
  });
});
