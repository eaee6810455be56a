/** What the use cases need: the pool, the ledger, kyc, the sealer, the bank rail, the clock and a few limits. */
import { DomainError } from "@treasury/contracts";
import { Coalescer, type Sealer } from "@treasury/service-kit";
import type { Logger } from "pino";
import type { BankRail } from "../adapters/bank-rail.ts";
import type { ComplianceDirectory } from "../adapters/compliance.ts";
import type { LedgerClient, Scope } from "../adapters/ledger.ts";
import type { Sql } from "../store/db.ts";
import { insertIntents, settleIntents, type IntentSettlement, type NewPayout, type PayoutRow } from "../store/payouts.ts";

/**
 * The two writes every payout makes, each coalesced: the intents (and settles) of the requests that arrive in
 * one event-loop turn go to PostgreSQL as one statement (service-kit coalesce.ts), each request still waiting
 * for its own row.
 */
export interface PayoutWrites {
  insertIntent(p: NewPayout): Promise<PayoutRow | undefined>;
  settleIntent(s: IntentSettlement): Promise<PayoutRow | undefined>;
}

export function coalescedWrites(sql: Sql): PayoutWrites {
  const inserts = new Coalescer((ps: readonly NewPayout[]) => insertIntents(sql, ps));
  const settles = new Coalescer((ss: readonly IntentSettlement[]) => settleIntents(sql, ss));
  return { insertIntent: (p) => inserts.submit(p), settleIntent: (s) => settles.submit(s) };
}

export interface PayoutsDeps {
  sql: Sql;
  writes: PayoutWrites;
  ledger: LedgerClient;
  compliance: ComplianceDirectory;
  /** Seals bank account numbers; undefined without PII_KEYS (bank accounts and live payouts are then refused). */
  sealer: Sealer | undefined;
  /** The live rail; undefined when the ACH drop is not configured (live payouts are then refused). */
  rail: BankRail | undefined;
  log: Logger;
  now: () => Date;
  /** Runs after a payout's intent is recorded, before its ledger post (a crash point of the recovery tests). */
  afterIntent: () => Promise<void>;
  /** Runs between the ledger post and the settle step (the other crash point); a no-op otherwise. */
  afterLedgerPost: () => Promise<void>;
  settlementDays: number;
  fileEntriesMax: number;
}

export function scopeOfAuth(auth: { org_id: string; livemode: boolean }): Scope {
  return { orgId: auth.org_id, livemode: auth.livemode };
}

export function requireSealer(deps: PayoutsDeps): Sealer {
  if (deps.sealer === undefined) {
    throw new DomainError("service_unavailable", "Bank details cannot be stored or read: encryption keys are not configured", {
      hint: "Set PII_KEYS for the payouts service",
    });
  }
  return deps.sealer;
}

/** Bank details are bound to where they live: a sealed value copied elsewhere does not open. */
export function bankAccountAad(scope: Scope, participantId: string): string {
  return `payouts.bank_account:${scope.orgId}:${String(scope.livemode)}:${participantId}`;
}

export function payoutDestinationAad(payoutId: string): string {
  return `payouts.payout_destination:${payoutId}`;
}

export function achFileAad(name: string): string {
  return `payouts.ach_file:${name}`;
}

/** What bank details hold sealed. */
export interface SealedBankDetails {
  account_holder_name: string;
  account_number: string;
}
