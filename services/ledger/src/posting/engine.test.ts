// Proves the posting rules (engine.ts) on an in-memory view, no database: what a request changes, which refusal
// comes first when several apply, that hold changes apply before the postings, that a creator repays what it owes
// from what a request frees, and who covers a take-back (the sale's hold, then the balance, then the receivable).
import { cents, DomainError, PostRequest, type Cents, type SystemAccountType } from "@treasury/contracts";
import { describe, expect, it } from "vitest";
import { NORMAL_SIDE, type Side } from "../domain/accounts.ts";
import { applyPosting, type Applied, type HoldState, type LedgerView, type WalletState } from "./engine.ts";

const ORG = "org_engine";
const A = "00000000-0000-4000-8000-00000000000a";
const B = "00000000-0000-4000-8000-00000000000b";
const C = "00000000-0000-4000-8000-0000000000c1";

function wallet(id: string, balance: number, over: Partial<WalletState> = {}): WalletState {
  return {
    id,
    orgId: ORG,
    livemode: false,
    accountType: "consumer_credit",
    participantId: null,
    status: "active",
    normal: "credit",
    balance: cents(balance),
    held: cents(0),
    ...over,
  };
}

class View implements LedgerView {
  readonly wallets = new Map<string, WalletState>();
  readonly holds = new Map<string, HoldState>();
  readonly owed = new Map<string, { id: string; outstanding: Cents }>();
  readonly participants = new Map<string, string>();
  systemAccountId(type: SystemAccountType, entityId: string): string | undefined {
    return `sys-${type}${entityId === "" ? "" : `:${entityId}`}`;
  }
  participantWalletId(participantId: string): string | undefined {
    return this.participants.get(participantId);
  }
  wallet(id: string): WalletState | undefined {
    return this.wallets.get(id);
  }
  hold(id: string): HoldState | undefined {
    return this.holds.get(id);
  }
  receivable(participantId: string): { id: string; outstanding: Cents } | undefined {
    return this.owed.get(participantId);
  }
  participantExists(participantId: string): boolean {
    return this.participants.has(participantId);
  }
  systemAccountNormal(id: string): Side | undefined {
    return id.startsWith("sys-") ? NORMAL_SIDE[id.slice(4).split(":")[0] as SystemAccountType] : undefined;
  }
}

function view(...wallets: WalletState[]): View {
  const v = new View();
  for (const w of wallets) v.wallets.set(w.id, w);
  return v;
}

function req(body: Record<string, unknown>): PostRequest {
  return PostRequest.parse({ org_id: ORG, livemode: false, kind: "test", reference_id: "r", ...body });
}

function applied(r: Applied | DomainError): Applied {
  if (r instanceof DomainError) throw r;
  return r;
}

const code = (r: Applied | DomainError): string | undefined => (r instanceof DomainError ? r.code : undefined);

describe("applyPosting", () => {
  it("moves money between wallets: entries debit then credit with each wallet's balance after, the headline amount", () => {
    const r = applied(
      applyPosting(req({ postings: [{ debit: { wallet_id: A }, credit: { wallet_id: B }, amount: 300 }] }), view(wallet(A, 1_000), wallet(B, 0))),
    );
    expect(r.entries).toEqual([
      { account_id: A, entry_type: "debit", amount: 300, balance_after: 700 },
      { account_id: B, entry_type: "credit", amount: 300, balance_after: 300 },
    ]);
    expect(Object.fromEntries(r.wallets)).toEqual({ [A]: { balance: 700, held: 0 }, [B]: { balance: 300, held: 0 } });
    expect(r.amount).toBe(300);
  });

  it("answers the first refusal in the rules' order: references, same account, holds, active wallets, preconditions, balances", () => {
    const v = view(wallet(A, 100), wallet(B, 0, { status: "frozen" }));
    v.holds.set("h-done", { id: "h-done", walletId: A, participantId: null, amount: cents(10), status: "released", releaseId: "rel" });
    const unknown = "00000000-0000-4000-8000-0000000000ff";
    expect(
      code(applyPosting(req({ postings: [{ debit: { wallet_id: unknown }, credit: { wallet_id: A }, amount: 1 }], holds_release: [{ hold_id: "nope" }] }), v)),
    ).toBe("wallet_not_found");
    expect(code(applyPosting(req({ postings: [{ debit: { wallet_id: A }, credit: { wallet_id: A }, amount: 1 }] }), v))).toBe("validation_error");
    expect(
      code(applyPosting(req({ postings: [{ debit: { wallet_id: A }, credit: { wallet_id: B }, amount: 1 }], holds_release: [{ hold_id: "nope" }] }), v)),
    ).toBe("hold_not_found");
    expect(code(applyPosting(req({ holds_release: [{ hold_id: "h-done" }] }), v))).toBe("hold_already_released");
    expect(code(applyPosting(req({ postings: [{ debit: { wallet_id: A }, credit: { wallet_id: B }, amount: 1 }] }), v))).toBe("wallet_not_active");
    const pre = applyPosting(
      req({
        postings: [{ debit: { system: "platform_cash" }, credit: { wallet_id: A }, amount: 5 }],
        preconditions: [{ wallet: { wallet_id: A }, available_gte: 101 }],
      }),
      v,
    );
    expect([code(pre), (pre as DomainError).extra?.["required"]]).toEqual(["insufficient_balance", 101]);
    expect(code(applyPosting(req({ postings: [{ debit: { wallet_id: A }, credit: { system: "platform_revenue" }, amount: 101 }] }), v))).toBe(
      "insufficient_balance",
    );
    expect(code(applyPosting(req({ postings: [{ debit: { participant_id: "nobody" }, credit: { wallet_id: A }, amount: 1 }] }), v))).toBe(
      "participant_not_found",
    );
    const otherOrg = view(wallet(A, 100, { orgId: "org_other" }));
    expect(code(applyPosting(req({ postings: [{ debit: { system: "platform_cash" }, credit: { wallet_id: A }, amount: 1 }] }), otherOrg))).toBe(
      "wallet_not_found",
    );
  });

  it("applies hold changes before the postings: a released hold's amount can move in the same request", () => {
    const v = view(wallet(A, 500, { held: cents(400) }), wallet(B, 0));
    v.holds.set("h1", { id: "h1", walletId: A, participantId: null, amount: cents(400), status: "held", releaseId: null });
    const moved = { postings: [{ debit: { wallet_id: A }, credit: { wallet_id: B }, amount: 450 }] };
    expect(code(applyPosting(req(moved), v))).toBe("insufficient_balance");
    const r = applied(applyPosting(req({ ...moved, holds_release: [{ hold_id: "h1", transfer_executed: true }] }), v));
    expect(r.wallets.get(A)).toEqual({ balance: 50, held: 0 });
    expect(r.holdsReleased.map((h) => [h.hold.id, h.transferExecuted])).toEqual([["h1", true]]);
  });

  it("has a creator who owes the platform repay from what the request frees, before it is available", () => {
    const v = view(wallet(C, 0, { accountType: "creator_earnings", participantId: "creator" }));
    v.participants.set("creator", C);
    v.owed.set("creator", { id: "sys-creator_receivable:creator", outstanding: cents(300) });
    const r = applied(applyPosting(req({ postings: [{ debit: { system: "platform_cash" }, credit: { participant_id: "creator" }, amount: 500 }] }), v));
    expect(r.recoveries).toEqual([{ participantId: "creator", receivableId: "sys-creator_receivable:creator", amount: 300 }]);
    expect(r.wallets.get(C)).toEqual({ balance: 200, held: 0 });
    expect(Object.fromEntries(r.systemDeltas)).toEqual({ "sys-platform_cash": 500, "sys-creator_receivable:creator": -300 });
  });

  it("covers a take-back from the sale's hold, then the balance, and books the shortfall to the receivable (or refuses)", () => {
    const v = view(wallet(C, 600, { accountType: "creator_earnings", participantId: "creator", held: cents(200) }));
    v.holds.set("h-sale", { id: "h-sale", walletId: C, participantId: "creator", amount: cents(200), status: "held", releaseId: null });
    const cover = { walletId: C, holdId: "h-sale", receivableId: "sys-creator_receivable:creator", reason: "reversal" };
    const postings = [{ debit: C, credit: "sys-platform_cash", amount: cents(1_000) }];
    const r = applied(applyPosting(req({}), v, { postings, cover }));
    expect(r.covered).toEqual({ fromHold: 200, shortfall: 400 });
    expect(r.holdsReleased).toEqual([{ hold: v.holds.get("h-sale"), transferExecuted: false, reason: "reversal" }]);
    expect(r.wallets.get(C)).toEqual({ balance: 0, held: 0 });
    expect(r.entries.map((e) => [e.account_id, e.entry_type, e.amount])).toEqual([
      [C, "debit", 600],
      ["sys-platform_cash", "credit", 600],
      ["sys-creator_receivable:creator", "debit", 400],
      ["sys-platform_cash", "credit", 400],
    ]);
    const refused = applyPosting(req({}), v, { postings, cover: { ...cover, refuseShortfall: true } });
    expect([code(refused), (refused as DomainError).extra?.["required"]]).toEqual(["insufficient_balance", 800]);
  });
});
