/** What the use cases need, made of ports only (ports.ts), and the helpers every use case shares about sealing. */
import type { RiskGate } from "@treasury/service-kit";
import { DomainError, type Tenant } from "@treasury/contracts";
import type { Logger } from "pino";
import type {
  AchFileStore,
  BankAccountStore,
  BankDetailsSealer,
  BankRail,
  ComplianceDirectory,
  LedgerClient,
  PayoutStore,
  ScheduleStore,
  SealedValueStore,
  TenantClock,
} from "./ports.ts";

export interface PayoutsDeps {
  payouts: PayoutStore;
  bankAccounts: BankAccountStore;
  achFiles: AchFileStore;
  sealedValues: SealedValueStore;
  schedules: ScheduleStore;
  ledger: LedgerClient;
  compliance: ComplianceDirectory;
  /** Asked before a payout's intent is recorded: refuses a denial (and an outage when the org fails closed); a review holds it. */
  risk: RiskGate;
  /** Seals bank account numbers; undefined without PII_KEYS (bank accounts and live payouts are then refused). */
  sealer: BankDetailsSealer | undefined;
  /** The live rail; undefined when the ACH drop is not configured (live payouts are then refused). */
  rail: BankRail | undefined;
  log: Logger;
  /** Real time, for when rows were written. */
  now: () => Date;
  /** The tenant's time, for every time-driven rule (payout schedules): the sandbox clock in sandbox. */
  clock: TenantClock;
  /** Runs after a payout's intent is recorded, before its ledger post (a crash point of the recovery tests). */
  afterIntent: () => Promise<void>;
  /** Runs between the ledger post and the settle step (the other crash point); a no-op otherwise. */
  afterLedgerPost: () => Promise<void>;
  settlementDays: number;
  fileEntriesMax: number;
}

export function requireSealer(deps: Pick<PayoutsDeps, "sealer">): BankDetailsSealer {
  if (deps.sealer === undefined) {
    throw new DomainError("service_unavailable", "Bank details cannot be stored or read: encryption keys are not configured", {
      hint: "Set PII_KEYS for the payouts service",
    });
  }
  return deps.sealer;
}

/** Bank details are bound to where they live: a sealed value copied elsewhere does not open. */
export function bankAccountAad(tenant: Tenant, participantId: string): string {
  return `payouts.bank_account:${tenant.orgId}:${String(tenant.livemode)}:${participantId}`;
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
