// Proves, for random sequences of top-ups, transfers, withdrawals, holds, releases, creator debts and earnings,
// that the ledger agrees with a simple model through both transaction paths (group commit, and a batch of one
// that claims first), that the two paths leave identical ledgers, that no wallet's available balance goes
// negative, and that every invariant holds.
import fc from "fast-check";
import { DomainError } from "@treasury/contracts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkInvariants } from "../verify/invariants.ts";
import { newOrg, startLedger, type LedgerHarness } from "../test-support.ts";
import { createHold, releaseHold } from "./holds.ts";
import { depositToWallet, transferBetweenWallets, withdrawFromWallet } from "./movements.ts";
import { createParticipant } from "./participants.ts";
import { Poster } from "../posting/poster.ts";
import { createWallet } from "./wallets.ts";

let h: LedgerHarness;
let alone: Poster;

beforeAll(async () => {
  h = await startLedger();
  alone = new Poster(h.sql, { groupCommit: false });
});
afterAll(async () => {
  await h?.close();
});

type Cmd =
  | { t: "topup"; w: number; amount: number }
  | { t: "transfer"; from: number; to: number; amount: number }
  | { t: "withdraw"; w: number; amount: number }
  | { t: "hold"; w: number; amount: number; withTarget: boolean }
  | { t: "release"; i: number; execute: boolean }
  | { t: "debt"; amount: number }
  | { t: "earn"; amount: number; held: boolean };

const WALLETS = 3; // 0, 1: consumer wallets (redeemable, transferable); 2: a participant's creator_earnings.
const CREATOR = 2;
const amount = fc.integer({ min: 1, max: 500 });
const wallet = fc.integer({ min: 0, max: WALLETS - 1 });
const cmd: fc.Arbitrary<Cmd> = fc.oneof(
  fc.record({ t: fc.constant("topup" as const), w: wallet, amount }),
  fc.record({ t: fc.constant("transfer" as const), from: wallet, to: wallet, amount }),
  fc.record({ t: fc.constant("withdraw" as const), w: wallet, amount }),
  fc.record({ t: fc.constant("hold" as const), w: wallet, amount, withTarget: fc.boolean() }),
  fc.record({ t: fc.constant("release" as const), i: fc.nat(), execute: fc.boolean() }),
  fc.record({ t: fc.constant("debt" as const), amount }),
  fc.record({ t: fc.constant("earn" as const), amount, held: fc.boolean() }),
);

interface ModelHold {
  id: string;
  w: number;
  amount: number;
  target: boolean;
  released: boolean;
}

async function codeOf(p: Promise<unknown>): Promise<string | null> {
  try {
    await p;
    return null;
  } catch (e) {
    if (e instanceof DomainError) return e.code;
    throw e;
  }
}

/** What a ledger holds for one org, free of ids: wallets, holds, and every account type's balance. */
async function ledgerOf(orgId: string): Promise<unknown> {
  const wallets = await h.env.adminSql`
    select owner_id, balance::int, held_amount::int from ledger.accounts where org_id = ${orgId} and is_wallet order by owner_id`;
  const holds = await h.env.adminSql`
    select h.reference_id, h.amount::int, h.status, h.release_transfer_executed from ledger.holds h where h.org_id = ${orgId} order by h.reference_id`;
  const accounts = await h.env.adminSql`
    select a.account_type, a.entity_id, coalesce(sum(s.balance), 0)::int as balance
    from ledger.accounts a left join ledger.account_balance_shards s on s.account_id = a.id
    where a.org_id = ${orgId} and not a.is_wallet group by a.account_type, a.entity_id order by a.account_type, a.entity_id`;
  // A release's reference is its hold's id, which differs between ledgers: it is named by the hold's reference.
  const entries = await h.env.adminSql`
    select t.kind, coalesce(h.reference_id, t.reference_id) as reference_id, count(e.*)::int as entries, coalesce(sum(e.amount), 0)::int as moved
    from ledger.transactions t left join ledger.entries e on e.transaction_id = t.id
      left join ledger.holds h on t.kind = 'hold_release' and h.id = t.reference_id
    where t.org_id = ${orgId} group by t.kind, coalesce(h.reference_id, t.reference_id) order by 1, 2`;
  return { wallets, holds, accounts, entries };
}

/** Runs the commands on a fresh org through one engine, checking each answer against the model. */
async function run(cmds: readonly Cmd[], poster: Poster): Promise<string> {
  const scope = { orgId: newOrg(), livemode: false };
  const deps = { ...h.deps, poster };
  const ids: string[] = [];
  for (const owner of ["buyer-0", "buyer-1"]) {
    ids.push(String((await createWallet(h.deps, scope, { owner_id: owner, redeemable: true, transferable: true })).wallet["id"]));
  }
  ids.push(String((await createParticipant(h.deps, scope, { participant_id: "creator" })).participant["wallet_id"]));
  const id = (w: number): string => ids[w] ?? "";
  const bal = Array<number>(WALLETS).fill(0);
  const held = Array<number>(WALLETS).fill(0);
  const holds: ModelHold[] = [];
  let debt = 0;
  const avail = (w: number): number => (bal[w] ?? 0) - (held[w] ?? 0);
  const add = (arr: number[], w: number, d: number): void => {
    arr[w] = (arr[w] ?? 0) + d;
  };
  /** The creator repays what it owes from what a change makes available, before it becomes available. */
  const repay = (freed: number): void => {
    const r = Math.min(debt, Math.max(0, freed), avail(CREATOR));
    add(bal, CREATOR, -r);
    debt -= r;
  };
  const raw = (ref: string, body: Record<string, unknown>) => poster.post({ org_id: scope.orgId, livemode: false, reference_id: ref, ...body });

  for (const [n, c] of cmds.entries()) {
    const ref = `ref-${n}`;
    let expected: string | null = null;
    let got: string | null;
    switch (c.t) {
      case "topup":
        expected = c.w === CREATOR ? "wallet_not_topupable" : null;
        got = await codeOf(depositToWallet(deps, scope, id(c.w), { amount: c.amount, reference_id: ref }));
        if (expected === null) add(bal, c.w, c.amount);
        break;
      case "transfer":
        expected = c.from === c.to ? "transfer_to_self" : c.amount > avail(c.from) ? "insufficient_balance" : null;
        got = await codeOf(transferBetweenWallets(deps, scope, { amount: c.amount, reference_id: ref, from_wallet_id: id(c.from), to_wallet_id: id(c.to) }));
        if (expected === null) {
          add(bal, c.from, -c.amount);
          add(bal, c.to, c.amount);
          if (c.to === CREATOR) repay(c.amount);
        }
        break;
      case "withdraw":
        expected = c.w === CREATOR ? "wallet_withdrawal_not_supported" : c.amount > avail(c.w) ? "insufficient_balance" : null;
        got = await codeOf(withdrawFromWallet(deps, scope, id(c.w), { amount: c.amount, reference_id: ref }));
        if (expected === null) add(bal, c.w, -c.amount);
        break;
      case "hold": {
        const target = c.withTarget && c.w !== CREATOR;
        expected = c.amount > avail(c.w) ? "insufficient_balance" : null;
        let holdId = "";
        got = await codeOf(
          createHold(deps, scope, {
            wallet_id: id(c.w),
            amount: c.amount,
            reference_id: ref,
            ...(target ? { release_transfer_to_participant_id: "creator" } : {}),
          }).then((r) => {
            holdId = String(r.hold["id"]);
          }),
        );
        if (expected === null) {
          add(held, c.w, c.amount);
          holds.push({ id: holdId, w: c.w, amount: c.amount, target, released: false });
        }
        break;
      }
      case "release": {
        const hold = holds[c.i % Math.max(1, holds.length)];
        if (hold === undefined) continue;
        expected = hold.released ? "hold_already_released" : null;
        got = await codeOf(releaseHold(deps, scope, hold.id, { execute_transfer: c.execute }));
        if (expected === null) {
          hold.released = true;
          add(held, hold.w, -hold.amount);
          if (hold.w === CREATOR) repay(hold.amount);
          if (c.execute && hold.target) {
            add(bal, hold.w, -hold.amount);
            add(bal, CREATOR, hold.amount);
            repay(hold.amount);
          }
        }
        break;
      }
      case "debt":
        // The platform advances money to the creator (as a reversal's shortfall does).
        got = await codeOf(
          raw(ref, {
            kind: "advance",
            postings: [{ debit: { system: "creator_receivable", entity_id: "creator" }, credit: { system: "platform_cash" }, amount: c.amount }],
          }),
        );
        debt += c.amount;
        break;
      case "earn": {
        // Earnings credited to the creator, optionally held at once (a sale with hold_funds).
        const body = {
          kind: "earning",
          postings: [{ debit: { system: "platform_cash" }, credit: { participant_id: "creator" }, amount: c.amount }],
          ...(c.held ? { holds_create: [{ wallet: { participant_id: "creator" }, amount: c.amount, reference_id: `${ref}-hold` }] } : {}),
        };
        let holdId = "";
        got = await codeOf(
          raw(ref, body).then((o) => {
            holdId = o.result.holds_created[0]?.hold_id ?? "";
          }),
        );
        add(bal, CREATOR, c.amount);
        if (c.held) {
          add(held, CREATOR, c.amount);
          holds.push({ id: holdId, w: CREATOR, amount: c.amount, target: false, released: false });
        } else repay(c.amount);
        break;
      }
    }
    expect(got, `${n}: ${JSON.stringify(c)}`).toBe(expected);
    const rows = await h.env.adminSql<{ id: string; balance: string; held_amount: string }[]>`
      select id, balance, held_amount from ledger.accounts where org_id = ${scope.orgId} and is_wallet`;
    for (const r of rows) expect(Number(r.balance) - Number(r.held_amount)).toBeGreaterThanOrEqual(0);
  }
  const rows = await h.env.adminSql<{ id: string; balance: string; held_amount: string }[]>`
    select id, balance, held_amount from ledger.accounts where org_id = ${scope.orgId} and is_wallet`;
  for (let w = 0; w < WALLETS; w++) {
    const row = rows.find((r) => r.id === id(w));
    expect({ balance: Number(row?.balance), held: Number(row?.held_amount) }).toEqual({ balance: bal[w], held: held[w] });
  }
  const [owed] = await h.env.adminSql<{ n: string }[]>`
    select coalesce(sum(s.balance), 0)::text as n from ledger.accounts a join ledger.account_balance_shards s on s.account_id = a.id
    where a.org_id = ${scope.orgId} and a.account_type = 'creator_receivable'`;
  expect(Number(owed?.n ?? 0)).toBe(debt);
  const report = await checkInvariants(h.env.adminSql, { orgId: scope.orgId });
  expect(report.violations).toEqual([]);
  return scope.orgId;
}

describe("ledger model property", () => {
  it("random operation sequences match the model through both transaction paths, which leave identical ledgers", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(cmd, { minLength: 1, maxLength: 14 }), async (cmds) => {
        const grouped = await run(cmds, h.poster);
        const single = await run(cmds, alone);
        expect(await ledgerOf(single)).toEqual(await ledgerOf(grouped));
      }),
      { numRuns: 50 },
    );
    const report = await checkInvariants(h.env.adminSql);
    expect(report.ok).toBe(true);
  }, 240_000);
});
