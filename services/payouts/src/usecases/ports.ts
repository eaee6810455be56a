/**
 * Every port the use cases need: the service's own records (store/ implements them over PostgreSQL), the ledger
 * and kyc (adapters/, over NATS), the bank rail (adapters/bank-rail.ts), and the sealer of bank details. The
 * use cases see only these; unit tests put in-memory fakes behind them (test/fakes.ts).
 */
import type { PostRequestInput, Tenant } from "@treasury/contracts";
import type { LedgerPosted, NewEvent, OutboxRowValues, Sealer } from "@treasury/service-kit";
import type { AchNotice, AchReturn } from "../domain/nacha-returns.ts";
import type { PayoutInterval, Weekday } from "../domain/schedule.ts";
import type { NachaCredit, NachaTotals } from "../domain/nacha.ts";
import type {
  AchFileRow,
  BankAccountRow,
  BankAccountValues,
  NewAchFile,
  NewPayout,
  PayoutAction,
  PayoutRow,
  PayoutStatus,
  ReturnFrom,
} from "../domain/records.ts";

// ---- the ledger -------------------------------------------------------------------------------------------

export interface LedgerWallet {
  id: string;
  wallet_type: "consumer_credit" | "creator_earnings";
  participant_id: string | null;
  status: string;
  balance: number;
  held_amount: number;
  available_balance: number;
  payout_supported: boolean;
}

export interface LedgerParticipant {
  id: string;
  wallet_id: string;
  available_balance_cents: number;
  /** What a payout may take now, less reserves (a ledger that keeps reserves shows it; else the available balance). */
  payable_balance_cents?: number;
}

/** One entry of a wallet as the ledger lists it (newest first): credits raise a creator wallet, debits lower it. */
export interface WalletEntry {
  entry_id: string;
  entry_type: "debit" | "credit";
  amount: number;
  transaction_id: string;
  reference_id: string;
  /** The ledger transaction's kind (sale, refund, transfer, payout…). */
  transaction_type: string;
  description: string | null;
  balance_after: number | null;
  created_at: string;
}

/**
 * The ledger as payouts sees it. `post` is the only way money moves: a ledger refusal is the same DomainError,
 * no answer is the kit's LedgerOutcomeUnknown (never "failed"). The reads answer service_unavailable when the
 * ledger does not answer (nothing was stored: the client may retry).
 */
export interface LedgerClient {
  post(req: PostRequestInput): Promise<LedgerPosted>;
  getParticipant(tenant: Tenant, participantId: string): Promise<LedgerParticipant>;
  /** Many participants' snapshots in one request (at most PARTICIPANT_BALANCES_MAX), by id; an unknown one is absent. */
  participantBalances(tenant: Tenant, participantIds: readonly string[]): Promise<Map<string, LedgerParticipant>>;
  getWallet(tenant: Tenant, walletId: string): Promise<LedgerWallet>;
  /** One page of a wallet's entries, newest first (at most 100 a page). */
  listWalletEntries(tenant: Tenant, walletId: string, page: { limit: number; offset: number }): Promise<{ entries: WalletEntry[]; total: number }>;
  /** How far a sandbox org's clock runs ahead of real time now, in seconds (the ledger owns the clock). */
  sandboxAdvance(tenant: Tenant): Promise<number>;
}

// ---- time -------------------------------------------------------------------------------------------------

/** The time each tenant runs on (the kit's clock: real time in live, the org's test clock in sandbox). */
export interface TenantClock {
  now(tenant: Tenant): Date;
  /** Seconds each advanced sandbox runs ahead of real time (for selecting due work of every org at once). */
  advanced(): ReadonlyMap<string, number>;
  /** An org's advance as the ledger answers it now, ahead of the event that brings it here. */
  sync(orgId: string, advancedSeconds: number): void;
}

// ---- kyc --------------------------------------------------------------------------------------------------

export interface CreatorCompliance {
  status: string;
  tax_certified: boolean;
}

export interface ComplianceDirectory {
  creator(tenant: Tenant, participantId: string): Promise<CreatorCompliance>;
  /**
   * Whether the participant certified a W-9 with the tax service (the other place a creator's tax certification
   * is recorded, beside the KYC submission's); false when the tax service cannot say.
   */
  taxProfileCertified(tenant: Tenant, participantId: string): Promise<boolean>;
  /** The organisation's business verification status (`pending` before any submission). */
  businessStatus(tenant: Tenant): Promise<string>;
}

// ---- the bank rail ----------------------------------------------------------------------------------------

export interface RailFile {
  name: string;
  creation: Date;
  fileIdModifier: string;
  effectiveDate: string;
  credits: readonly NachaCredit[];
}

export interface BankRail {
  /** The trace number an entry with this sequence gets. */
  traceNumber(sequence: number): string;
  /** The settlement date of credits sent at `now`. */
  effectiveDate(now: Date): string;
  fileName(creation: Date, fileIdModifier: string): string;
  render(file: RailFile): { text: string; totals: NachaTotals };
  /** Delivers the file under its name; delivering the same name again replaces it with the same bytes. */
  deliver(name: string, text: string): Promise<{ location: string }>;
  parseReturns(text: string): { returns: AchReturn[]; notices: AchNotice[] };
}

// ---- sealing ----------------------------------------------------------------------------------------------

/** Seals and opens bank details (AES-256-GCM with the key ring; the kit's Sealer). */
export type BankDetailsSealer = Pick<Sealer, "activeKeyId" | "seal" | "open" | "sealJson" | "openJson">;

// ---- payouts ----------------------------------------------------------------------------------------------

/** posting → pending (live) or paid (sandbox): what the ledger answered, and the events it causes. */
export interface IntentSettlement {
  id: string;
  status: "pending" | "paid";
  transaction_id: string;
  wallet_id: string | null;
  previous_balance: number | null;
  new_balance: number | null;
  at: Date;
  /** Written in order, and only if the payout moved. */
  events: readonly OutboxRowValues[];
}

export interface ListFilter {
  participantId?: string | undefined;
  status?: "pending" | "under_review" | "processing" | "paid" | "failed" | undefined;
  limit: number;
  offset: number;
}

/** What a transition records when it is marked, for every driver of it to send the same ledger request. */
export interface ActionFields {
  return_code?: string;
  return_from?: ReturnFrom;
  return_fee?: number;
  /** A cancel's reason, shown as the payout's failure reason. */
  failure_reason?: string;
}

export interface ActionOutcome {
  status: "paid" | "failed";
  transaction_id: string;
  failure_reason?: string | null;
  bank_transfer_status: string;
  /**
   * A return saying the account cannot take money: the participant's bank account `id` is disabled in the same
   * statement, with `event`, if it is still active and still the payout's destination (its routing number, type
   * and last four digits, set no later than the payout was requested: an account set since is another one).
   */
  disable_bank_account?: { id: string; reason: string; event: OutboxRowValues } | undefined;
}

export interface PayoutStore {
  /**
   * Records an intent (`posting`); undefined when its reference is taken (the caller reads the existing one).
   * Intents of requests that arrive in one event-loop turn go to PostgreSQL as one statement.
   */
  insertIntent(p: NewPayout): Promise<PayoutRow | undefined>;
  /** Moves a `posting` payout with its events, coalesced like insertIntent; undefined when another driver won. */
  settleIntent(s: IntentSettlement): Promise<PayoutRow | undefined>;
  findByReference(tenant: Tenant, referenceId: string): Promise<PayoutRow | undefined>;
  findPayout(tenant: Tenant, id: string): Promise<PayoutRow | undefined>;
  findById(id: string): Promise<PayoutRow | undefined>;
  /** A refused intent asked for again with the same request: back to `posting`, once. */
  retryRefused(id: string): Promise<PayoutRow | undefined>;
  /** A refused intent moved nothing: a different request with its reference_id replaces it. */
  discardRefused(id: string): Promise<void>;
  refuse(id: string, code: string): Promise<void>;
  /** The payout an evaluation holds under review, while it is under review. */
  findUnderReview(tenant: Tenant, evaluationId: string): Promise<PayoutRow | undefined>;
  /** under_review → posting (approved); undefined when it was no longer under review. */
  releaseReview(id: string): Promise<PayoutRow | undefined>;
  /** A reviewed payout that never posted → failed with its reason and event; undefined when it had moved on. */
  failUnposted(id: string, from: "under_review" | "posting", reason: string, event: (row: PayoutRow) => OutboxRowValues): Promise<PayoutRow | undefined>;
  /** Visible payouts, newest first (an intent not yet posted shows as pending; refused ones are not shown). */
  list(tenant: Tenant, f: ListFilter): Promise<{ rows: PayoutRow[]; total: number }>;
  /** Payouts stuck in `posting` past the grace period, oldest first. */
  stuckPosting(graceMs: number, limit: number): Promise<PayoutRow[]>;
  /** Settles and returns in flight past the grace period, oldest first. */
  stuckActions(graceMs: number, limit: number): Promise<PayoutRow[]>;
  /**
   * Starts a transition of a live payout (settle or return of a filed one, cancel of an unfiled one): at most one
   * in flight, and only from the given states.
   */
  markAction(id: string, action: PayoutAction, from: readonly PayoutStatus[], fields?: ActionFields): Promise<PayoutRow | undefined>;
  /** The live payouts of a participant waiting for a bank file (pending, nothing in flight). */
  unfiledOf(tenant: Tenant, participantId: string): Promise<PayoutRow[]>;
  /** What a returned payout costs its creator in this org and environment (`admin payouts set-return-fee`); 0 when unset. */
  returnFee(tenant: Tenant): Promise<number>;
  /** Ends the transition in flight with its outcome and event; undefined when another driver ended it. */
  finishAction(id: string, action: PayoutAction, fields: ActionOutcome, event: OutboxRowValues): Promise<PayoutRow | undefined>;
  /** Processing payouts filed before `before`: settled by the bank by now. */
  dueForSettlement(before: Date, limit: number): Promise<PayoutRow[]>;
  /** The filed payout a returned entry names. */
  findByTrace(trace: string): Promise<PayoutRow | undefined>;
}

// ---- bank accounts ----------------------------------------------------------------------------------------

export interface BankAccountStore {
  find(tenant: Tenant, participantId: string): Promise<BankAccountRow | undefined>;
  /**
   * Inserts or replaces the participant's account (a new row takes `id`; a replaced one keeps its own) and writes
   * the event `eventOf` makes of the saved row, in one transaction.
   */
  save(
    tenant: Tenant,
    participantId: string,
    id: string,
    values: BankAccountValues,
    eventOf: (row: BankAccountRow) => NewEvent,
  ): Promise<{ row: BankAccountRow; created: boolean }>;
  /**
   * Replaces the details (a notification of change) of the account whose sealed value is still `expectedSealed`,
   * keeping its status, with the event `eventOf` makes, in one transaction; undefined when it changed since.
   */
  correct(
    tenant: Tenant,
    participantId: string,
    expectedSealed: string,
    values: BankAccountValues,
    eventOf: (row: BankAccountRow) => NewEvent,
  ): Promise<BankAccountRow | undefined>;
}

// ---- ACH files --------------------------------------------------------------------------------------------

/** What a cut does inside its transaction. */
export interface AchCut {
  /** Live payouts waiting for a file, oldest first, locked for this cut (never a sandbox payout). */
  claimUnfiled(limit: number): Promise<PayoutRow[]>;
  /** The next free file id modifier (A–Z, then 0–9) of a creation day; undefined when all 36 are used. */
  nextModifier(creationDate: string): Promise<string | undefined>;
  nextTraceSequences(n: number): Promise<number[]>;
  insertFile(f: NewAchFile): Promise<AchFileRow>;
  /** pending → processing for every payout of the file, with its trace number, and each one's event. */
  markFiled(fileId: string, traces: ReadonlyMap<string, string>, events: readonly OutboxRowValues[]): Promise<string[]>;
}

export interface AchFileStore {
  /** Runs `fn` in one transaction, one cut at a time across replicas (file id modifiers are counted per day). */
  cut<T>(fn: (cut: AchCut) => Promise<T>): Promise<T>;
  undelivered(limit: number): Promise<AchFileRow[]>;
  markDelivered(id: string, location: string): Promise<void>;
}

// ---- key rotation -----------------------------------------------------------------------------------------

/** One reseal batch, in one transaction: the values sealed with the given key ids, locked, and their update. */
export interface ResealBatch {
  bankAccounts(keyIds: readonly string[], limit: number): Promise<{ id: string; org_id: string; livemode: boolean; participant_id: string; sealed: string }[]>;
  updateBankAccount(id: string, sealed: string, keyId: string): Promise<void>;
  destinations(keyIds: readonly string[], limit: number): Promise<{ id: string; dest_sealed: string }[]>;
  updateDestination(id: string, sealed: string): Promise<void>;
  achFiles(keyIds: readonly string[], limit: number): Promise<{ id: string; name: string; sealed_content: string }[]>;
  updateAchFile(id: string, sealed: string, keyId: string): Promise<void>;
}

export interface SealedValueStore {
  batch<T>(fn: (batch: ResealBatch) => Promise<T>): Promise<T>;
}

// ---- payout schedules -------------------------------------------------------------------------------------

export interface ScheduleValues {
  interval: PayoutInterval;
  weekly_anchor: Weekday | null;
  monthly_anchor: number | null;
  delay_days: number;
  minimum_amount_cents: number;
  next_run_at: Date | null;
}

export interface ScheduleRow extends ScheduleValues {
  org_id: string;
  livemode: boolean;
  participant_id: string;
  created_at: Date;
  updated_at: Date;
}

/** Which schedules are due: those whose next run is at or before `at`, plus each advanced sandbox's advance. */
export interface DueCutoff {
  at: Date;
  advanced: ReadonlyMap<string, number>;
}

export interface ScheduleKey {
  org_id: string;
  livemode: boolean;
  participant_id: string;
}

/** What one run did for one period. */
export interface ScheduleRun extends ScheduleKey {
  period: string;
  outcome: "paid" | "skipped";
  payout_id: string | null;
  amount_cents: number | null;
  reason: string | null;
}

export interface ScheduleStore {
  find(tenant: Tenant, participantId: string): Promise<ScheduleRow | undefined>;
  /** Inserts or replaces the participant's schedule (and drops a claim in flight: its run moves nothing it set). */
  save(tenant: Tenant, participantId: string, values: ScheduleValues): Promise<ScheduleRow>;
  /**
   * Due schedules after `after` in key order, at most `limit`, each claimed with `token` for `leaseMs` (one not
   * claimed by another run, or whose claim expired): no two runs work on one schedule at once.
   */
  claimDue(cutoff: DueCutoff, after: ScheduleKey | undefined, limit: number, token: string, leaseMs: number): Promise<ScheduleRow[]>;
  /** The runs recorded for these schedules' periods (one statement; a period without a record is not in the answer). */
  findRuns(periods: readonly SchedulePeriod[]): Promise<ScheduleRun[]>;
  /**
   * Ends a batch of this run's claims in one statement: records each run once per period with its event (only if
   * the run was recorded now), and moves each schedule still claimed with `token` to its next run. Answers, in
   * order, whether each outcome's run was recorded now (false when the period had one already, or none was given).
   */
  settle(token: string, outcomes: readonly ScheduleOutcome[]): Promise<boolean[]>;
}

export interface SchedulePeriod extends ScheduleKey {
  period: string;
}

/** How one claimed schedule ends this run. */
export interface ScheduleOutcome {
  key: ScheduleKey;
  /** What the run did for its period; none when it did nothing (not due, or recorded already). */
  run: ScheduleRun | undefined;
  /** Written with the run, and only if the run is recorded now (a skip's `payout.skipped`). */
  event: NewEvent | undefined;
  /** Its next run; undefined leaves it due (a failure: a later pass retries it). */
  next: Date | undefined;
}
