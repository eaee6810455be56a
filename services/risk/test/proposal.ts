/** A proposal for tests: a payout of $10.00 with no optional field, overridden by `p`. */
import { parseCents } from "@treasury/contracts";
import type { Proposal } from "../src/domain/rules.ts";

export function proposal(p: Partial<Proposal> = {}): Proposal {
  return {
    operation: "payout",
    amount: parseCents(1_000),
    currency: "usd",
    participantId: undefined,
    buyerId: undefined,
    ip: undefined,
    category: undefined,
    authorizingInstrumentId: undefined,
    expectedDate: undefined,
    counterpartyName: undefined,
    bankAccountUpdatedAt: undefined,
    ...p,
  };
}
