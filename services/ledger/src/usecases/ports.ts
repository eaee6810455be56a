/**
 * Every port the ledger's use cases depend on: the stores (PostgreSQL adapters in store/, in-memory fakes in the
 * unit tests), the posting engine (posting/, the one writer of balances and entries), the statement parser
 * (statement-parser/) and the clock. Use cases import these and the rows they answer (rows.ts), never an adapter.
 * Every read and write names its tenant (org and environment).
 */
import type { ParseOptions, ParseResult } from "@treasury/bank-statements";
import type { PostOutcome, PostRequestInput, Tenant } from "@treasury/contracts";
import type { AccountType, Side, SystemAccountType } from "../domain/accounts.ts";
import type { Cover, ResolvedPosting } from "../domain/posting.ts";
import type { RefundPlan } from "../domain/refund.ts";
import type {
  AccountTotals,
  BankLineFilter,
  BankLineForMatching,
  BankLineRow,
  BankSideTransaction,
  BillRow,
  EntryRow,
  HistoryRow,
  HoldFilter,
  HoldRow,
  HoldsSummaryRow,
  ListedEntry,
  ListedRow,
  MatchCandidate,
  MatchRow,
  NewBankLine,
  NewBill,
  NewImport,
  NewMatch,
  NewParticipant,
  NewReserve,
  NewWallet,
  ParticipantRow,
  ParticipantWithBalance,
  RecordEntryRow,
  RecordRow,
  RecordSaleRow,
  ReserveRow,
  SaleRow,
  SystemAccount,
  TemplateRow,
  TransactionFilter,
  TransactionRange,
  TransactionRow,
  WalletEntryRow,
  WalletFilter,
  WalletRow,
} from "./rows.ts";

export type Page<R> = { rows: R[]; total: number };
type Range = { from?: Date | undefined; to?: Date | undefined };

// ---- The posting engine ----

/** Postings computed inside the transaction (under row locks the extension takes), by account id. */
export interface Derived {
  postings: ResolvedPosting[];
  /** Who covers what the postings take from a creator wallet (the engine applies it: posting/engine.ts). */
  cover?: Cover;
  /** The transaction's headline amount, when only the extension knows it. */
  amount?: number;
  extra?: Record<string, unknown>;
}

/**
 * In-process extensions of a post (never reachable over RPC). `derive` runs inside the transaction right after
 * the idempotency claim, so it can lock rows (a sale, a bill) and compute postings from what it read; it locks
 * rows other than wallets and holds before the engine locks those (sales, transactions, bills, then wallets,
 * then holds: one order everywhere). `hashInput` replaces the request as the idempotency hash (what the client
 * asked for, when the postings depend on state).
 */
export interface PostHooks {
  derive?: (tx: TxStore, ctx: { transactionId: string; tenant: Tenant }) => Promise<Derived>;
  hashInput?: unknown;
  /**
   * The request whose hash is the idempotency hash, when the ledger added to what the client asked for (a sale's
   * reserve hold): a replay then matches whatever the ledger added the first time. Unlike hashInput, the request
   * keeps group commit.
   */
  hashAs?: PostRequestInput;
  /** Indexes into holds_create of the holds that release themselves at hold_until (each must have one). */
  autoRelease?: readonly number[];
  /** Who released the request's holds_release, as `hold.released` says (`api`: a client's release; `schedule`: auto-release). */
  releasedBy?: "api" | "schedule";
  /** A refund's facts about its sale: the engine computes the refund inside the batch (usecases/refund.ts). */
  refund?: RefundPlan;
}

/** The posting engine, as the use cases see it. */
export interface PostPort {
  /** Posts a request; `duplicate` is true when the key was already posted with the same request. */
  post(input: unknown, hooks?: PostHooks): Promise<PostOutcome>;
}

// ---- Stores: reads and writes outside the posting transaction ----

export interface WalletStore {
  findById(t: Tenant, id: string): Promise<WalletRow | undefined>;
  /** A participant's creator_earnings wallet. */
  findCreator(t: Tenant, participantId: string): Promise<WalletRow | undefined>;
  /** An owner's consumer_credit wallet. */
  findConsumer(t: Tenant, ownerId: string): Promise<WalletRow | undefined>;
  /** Undefined when the owner already has a wallet of that type (the unique key decides). */
  insert(t: Tenant, w: NewWallet): Promise<WalletRow | undefined>;
  list(t: Tenant, f: WalletFilter, limit: number, offset: number): Promise<Page<WalletRow>>;
  /** A wallet's entries, newest first. */
  entries(t: Tenant, walletId: string, limit: number, offset: number): Promise<Page<WalletEntryRow>>;
}

export interface ParticipantStore {
  find(t: Tenant, participantId: string): Promise<ParticipantWithBalance | undefined>;
  list(t: Tenant, limit: number, offset: number): Promise<Page<ParticipantWithBalance>>;
  /** The participants named that exist (any order; an unknown id is not in the answer). */
  findMany(t: Tenant, participantIds: readonly string[]): Promise<ParticipantWithBalance[]>;
  exists(t: Tenant, participantId: string): Promise<boolean>;
}

export interface HoldStore {
  find(t: Tenant, id: string): Promise<HoldRow | undefined>;
  list(t: Tenant, f: HoldFilter, limit: number, offset: number): Promise<Page<HoldRow>>;
  /** Totals of held holds; ready = due by `now` (the tenant's clock). */
  summary(t: Tenant, now: Date): Promise<HoldsSummaryRow>;
  /** Active holds of some wallets, oldest first. */
  activeOfWallets(t: Tenant, walletIds: readonly string[]): Promise<HoldRow[]>;
  /**
   * Auto-release holds of every org and environment whose hold_until has passed on their own clock (live:
   * `realNow`; an org's sandbox: `realNow` plus its advance), soonest first, at most `limit`.
   */
  dueForRelease(realNow: Date, advanced: ReadonlyMap<string, number>, limit: number): Promise<DueHold[]>;
}

/** An auto-release hold that is due. */
export interface DueHold {
  id: string;
  org_id: string;
  livemode: boolean;
}

export interface ReserveStore {
  /** The reserves of some participants (none stored: not in the answer). */
  find(t: Tenant, participantIds: readonly string[]): Promise<ReserveRow[]>;
  /** Replaces a participant's reserve. */
  put(t: Tenant, r: NewReserve): Promise<ReserveRow>;
}

export interface AccountStore {
  /** A system account, created (with its balance shards) on first use, outside any posting transaction. */
  ensureSystem(t: Tenant, type: SystemAccountType, entityId?: string): Promise<SystemAccount>;
  /** Kinds of accounts named by id. */
  kinds(t: Tenant, ids: readonly string[]): Promise<{ id: string; normal_side: Side; is_wallet: boolean; account_type: AccountType }[]>;
}

export interface SaleStore {
  /** A sale by its reference, unlocked (its transaction, creator and hold never change). */
  find(t: Tenant, saleReference: string): Promise<SaleRow | undefined>;
  /** The participant of the sale a transaction recorded; undefined when it recorded none (or no creator). */
  participantOf(t: Tenant, transactionId: string): Promise<string | undefined>;
}

export interface TransactionStore {
  find(t: Tenant, id: string): Promise<TransactionRow | undefined>;
  /** The latest reversal of a transaction. */
  latestReversal(t: Tenant, id: string): Promise<TransactionRow | undefined>;
  /** A transaction's entries in the order they were written (each posting wrote its debit, then its credit). */
  entries(t: Tenant, transactionId: string): Promise<EntryRow[]>;
}

export interface BillStore {
  find(t: Tenant, by: { id?: string | undefined; transactionId?: string | undefined }): Promise<BillRow | undefined>;
}

/** Read models: transaction listings, per-account totals (reports). */
export interface ListingStore {
  transactions(t: Tenant, f: TransactionFilter, limit: number, offset: number): Promise<Page<ListedRow>>;
  entriesWithAccounts(t: Tenant, transactionIds: readonly string[]): Promise<Map<string, ListedEntry[]>>;
  accountTotals(t: Tenant, range: Range): Promise<AccountTotals[]>;
  byAccountingTime(t: Tenant, range: Range, limit: number, offset: number): Promise<Page<HistoryRow>>;
}

/** The record of one transaction as written (signed ledger proofs). */
export interface RecordStore {
  transaction(t: Tenant, id: string): Promise<RecordRow | undefined>;
  entries(t: Tenant, transactionId: string): Promise<RecordEntryRow[]>;
  sale(t: Tenant, transactionId: string): Promise<RecordSaleRow | undefined>;
}

export interface BankLineStore {
  templates(t: Tenant): Promise<TemplateRow[]>;
  findTemplate(t: Tenant, id: string): Promise<TemplateRow | undefined>;
  /** Saves a template, replacing the mapping of one with the same name; `created` says which happened. */
  saveTemplate(
    t: Tenant,
    tpl: { id: string; name: string; mapping: Record<string, unknown>; description: string | null },
  ): Promise<TemplateRow & { created: boolean }>;
  find(t: Tenant, id: string): Promise<BankLineRow | undefined>;
  /** Bank lines without an active match, oldest booking date first. */
  unmatched(t: Tenant, f: BankLineFilter, limit: number, offset: number): Promise<Page<BankLineRow>>;
  /** Every unmatched bank line in a range (at most `limit`, oldest first), as auto-match reads them. */
  unmatchedForMatching(t: Tenant, f: BankLineFilter, limit: number): Promise<BankLineForMatching[]>;
}

export interface ReconciliationStore {
  /** Inserts matches, skipping those whose line or transaction is matched already; answers the rows inserted. */
  insert(t: Tenant, matches: readonly NewMatch[]): Promise<MatchRow[]>;
  /** As insert, answering only the ids inserted (bulk runs keep no rows in memory). */
  insertIds(t: Tenant, matches: readonly NewMatch[]): Promise<string[]>;
  findMany(t: Tenant, ids: readonly string[]): Promise<MatchRow[]>;
  find(t: Tenant, id: string): Promise<MatchRow | undefined>;
  activeOf(t: Tenant, by: { bankLineId: string } | { transactionId: string }): Promise<MatchRow | undefined>;
  /** Ends an active match; undefined when it is not active. */
  end(t: Tenant, id: string): Promise<MatchRow | undefined>;
  transactionExists(t: Tenant, id: string): Promise<boolean>;
  /** Unmatched transactions that moved cash, oldest accounting time first. */
  unmatchedTransactions(t: Tenant, range: TransactionRange, limit: number, offset: number): Promise<BankSideTransaction[]>;
  countUnmatchedTransactions(t: Tenant, range: TransactionRange): Promise<number>;
  /** Unmatched transactions that moved cash, as auto-match candidates in `currency`, oldest first. */
  candidates(t: Tenant, range: TransactionRange, currency: string, limit: number): Promise<MatchCandidate[]>;
}

// ---- Inside one database transaction (a posting's extension, a participant's creation, an import) ----

/**
 * What a use case may do inside a database transaction: the posting engine's (PostHooks.derive, after the claim and
 * before the engine's own locks) or one of its own (LedgerDeps.transaction). Locks follow the one order: sales,
 * transactions, bills, then wallets, then holds.
 */
export interface TxStore {
  wallets: Pick<WalletStore, "insert">;
  participants: {
    /** Undefined when the participant id exists already. */
    insert(t: Tenant, p: NewParticipant): Promise<ParticipantRow | undefined>;
    find(t: Tenant, participantId: string): Promise<ParticipantWithBalance | undefined>;
  };
  sales: {
    /** The sale a transaction recorded, locked (refunds and reversals change its remainder under this lock). */
    lockByTransaction(t: Tenant, transactionId: string): Promise<SaleRow | undefined>;
    lockByReference(t: Tenant, saleReference: string): Promise<SaleRow | undefined>;
    /** The remainder by side (refunded = creator + platform, checked by the table). */
    updateRemainder(
      t: Tenant,
      saleReference: string,
      r: { refunded: number; creatorRefunded: number; platformRefunded: number; reversed: boolean },
    ): Promise<void>;
  };
  transactions: {
    lock(t: Tenant, id: string): Promise<TransactionRow | undefined>;
    latestReversal(t: Tenant, id: string): Promise<TransactionRow | undefined>;
    /** Links a reversal to its original and records how much of the original is reversed. */
    markReversal(t: Tenant, reversalId: string, originalId: string, reversedAmount: number, fully: boolean): Promise<void>;
  };
  bills: {
    insert(t: Tenant, b: NewBill): Promise<void>;
    lock(t: Tenant, id: string): Promise<BillRow | undefined>;
    pay(t: Tenant, id: string, amount: number): Promise<BillRow>;
  };
  imports: {
    insertImport(t: Tenant, i: NewImport): Promise<void>;
    /** Answers the ids inserted (lines already stored are skipped). */
    insertLines(t: Tenant, importId: string, lines: readonly NewBankLine[]): Promise<Set<string>>;
    settleImport(t: Tenant, id: string, imported: number, duplicates: number): Promise<void>;
  };
}

// ---- Other ports ----

/**
 * Reads a statement off the ledger's event loop (statement-parser/pool.ts: worker threads with a time budget).
 * Rejects with the library's StatementError, or a DomainError: statement_too_complex past the budget,
 * service_unavailable when every reader is busy or the caller's deadline passed while it waited.
 */
export interface StatementParser {
  parse(input: Buffer | string, opts: ParseOptions, deadline: number): Promise<ParseResult>;
}

/**
 * The clock: what "now" is for a tenant (holds' readiness, auto-release, reports' default end). Live runs on real
 * time; an org's sandbox on real time plus how far its test clock was advanced (the kit's svc.clock).
 */
export type Clock = (tenant: Tenant) => Date;

/** The ledger's copy of the sandbox test clocks (the kit table ledger.sandbox_clocks, which the ledger owns). */
export interface SandboxClockStore {
  /** Seconds the org's sandbox runs ahead of real time, as stored (0 when never advanced). */
  advancedSeconds(orgId: string): Promise<number>;
  /**
   * In one database transaction: reads the org's advance under lock and asks `next` for the new one; when it is
   * larger, writes it and the `sandbox_clock.advanced` event with `data(seconds)`. Answers the advance in force.
   */
  advance(orgId: string, next: (current: number) => number, data: (seconds: number) => Record<string, unknown>): Promise<number>;
}
