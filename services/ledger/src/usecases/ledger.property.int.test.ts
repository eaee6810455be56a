// Proves, for random sequences of top-ups, transfers, withdrawals, holds and releases, that the ledger agrees
// with a simple model, never lets a wallet's available balance go negative, and keeps every invariant.
import fc from "fast-check";
import { DomainError } from "@treasury/contracts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkInvariants } from "../invariants.ts";
import { newOrg, startLedger, type LedgerHarness } from "../test-support.ts";
import { createHold, releaseHold } from "./holds.ts";
import { depositToWallet, transferBetweenWallets, withdrawFromWallet } from "./movements.ts";
import { createParticipant } from "./participants.ts";
import { createWallet } from "./wallets.ts";

let h: LedgerHarness;

beforeAll(async () => {
  h = await startLedger();
});
afterAll(async () => {
  await h?.close();
});

type Cmd =
  | { t: "topup"; w: number; amount: number }
  | { t: "transfer"; from: number; to: number; amount: number }
  | { t: "withdraw"; w: number; amount: number }
  | { t: "hold"; w: number; amount: number; withTarget: boolean }
  | { t: "release"; i: number; execute: boolean };

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

describe("ledger model property", () => {
  it("random operation sequences match the model and keep the invariants", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(cmd, { minLength: 1, maxLength: 14 }), async (cmds) => {
        const scope = { orgId: newOrg(), livemode: false };
        const ids: string[] = [];
        for (const owner of ["buyer-0", "buyer-1"]) {
          ids.push(String((await createWallet(h.sql, scope, { owner_id: owner, redeemable: true, transferable: true })).wallet["id"]));
        }
        ids.push(String((await createParticipant(h.sql, scope, { participant_id: "creator" })).participant["wallet_id"]));
        const id = (w: number): string => ids[w] ?? "";
        const bal = Array<number>(WALLETS).fill(0);
        const held = Array<number>(WALLETS).fill(0);
        const holds: ModelHold[] = [];
        const avail = (w: number): number => (bal[w] ?? 0) - (held[w] ?? 0);
        const add = (arr: number[], w: number, d: number): void => {
          arr[w] = (arr[w] ?? 0) + d;
        };

        for (const [n, c] of cmds.entries()) {
          const ref = `ref-${n}`;
          let expected: string | null = null;
          let got: string | null;
          switch (c.t) {
            case "topup":
              expected = c.w === CREATOR ? "wallet_not_topupable" : null;
              got = await codeOf(depositToWallet(h.sql, scope, id(c.w), { amount: c.amount, reference_id: ref }));
              if (expected === null) add(bal, c.w, c.amount);
              break;
            case "transfer":
              expected = c.from === c.to ? "transfer_to_self" : c.amount > avail(c.from) ? "insufficient_balance" : null;
              got = await codeOf(transferBetweenWallets(h.sql, scope, { amount: c.amount, reference_id: ref, from_wallet_id: id(c.from), to_wallet_id: id(c.to) }));
              if (expected === null) {
                add(bal, c.from, -c.amount);
                add(bal, c.to, c.amount);
              }
              break;
            case "withdraw":
              expected = c.w === CREATOR ? "wallet_withdrawal_not_supported" : c.amount > avail(c.w) ? "insufficient_balance" : null;
              got = await codeOf(withdrawFromWallet(h.sql, scope, id(c.w), { amount: c.amount, reference_id: ref }));
              if (expected === null) add(bal, c.w, -c.amount);
              break;
            case "hold": {
              const target = c.withTarget && c.w !== CREATOR;
              expected = c.amount > avail(c.w) ? "insufficient_balance" : null;
              let holdId = "";
              got = await codeOf(
                createHold(h.sql, scope, { wallet_id: id(c.w), amount: c.amount, reference_id: ref, ...(target ? { release_transfer_to_participant_id: "creator" } : {}) }).then((r) => {
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
              got = await codeOf(releaseHold(h.sql, scope, hold.id, { execute_transfer: c.execute }));
              if (expected === null) {
                hold.released = true;
                add(held, hold.w, -hold.amount);
                if (c.execute && hold.target) {
                  add(bal, hold.w, -hold.amount);
                  add(bal, CREATOR, hold.amount);
                }
              }
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
        const report = await checkInvariants(h.env.adminSql, { orgId: scope.orgId });
        expect(report.violations).toEqual([]);
      }),
      { numRuns: 50 },
    );
    const report = await checkInvariants(h.env.adminSql);
    expect(report.ok).toBe(true);
  }, 120_000);
});
