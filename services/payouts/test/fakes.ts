/**
 * In-memory stand-ins behind the use cases' ports (src/usecases/ports.ts), for unit tests: no PostgreSQL, no
 * NATS. Each store keeps the conditions its SQL has (a settle moves only a `posting` row, an action starts only
 * on a live row without one in flight…), so a use case that relies on them is tested against them.
 */
import { cents, DomainError, type PostRequestInput, type Tenant } from "@treasury/contracts";
import { createLogger, generateKeyRingEntry, parseKeyRing, Sealer, type LedgerPosted, type NewEvent, type OutboxRowValues } from "@treasury/service-kit";
import type { BankAccountRow, PayoutRow } from "../src/domain/records.ts";
import type { PayoutsDeps } from "../src/usecases/deps.ts";
import type {
  ActionOutcome,
  AchFileStore,
  BankAccountStore,
  BankRail,
  ComplianceDirectory,
  CreatorCompliance,
  LedgerClient,
  LedgerParticipant,
  LedgerWallet,
  PayoutStore,
  ScheduleKey,
  ScheduleRow,
  ScheduleRun,
  ScheduleStore,
  SealedValueStore,
  TenantClock,
  WalletEntry,
} from "../src/usecases/ports.ts";

const same = (r: { org_id: string; livemode: boolean }, t: Tenant) => r.org_id === t.orgId && r.livemode === t.livemode;

export class FakePayoutStore implements PayoutStore {
  readonly rows = new Map<string, PayoutRow>();
  /** The events written, in order, with the payout whose change wrote them. */
  readonly events: OutboxRowValues[] = [];
  /** The bank accounts a return's finish disables in its statement (fakes() links the bank account fake). */
  disableAccount: ((payout: PayoutRow, disable: NonNullable<ActionOutcome["disable_bank_account"]>) => void) | undefined;
  private clock = 0;

  /** Distinct, increasing timestamps, as rows written one after another get. */
  private tick(): Date {
    return new Date(Date.UTC(2026, 10, 27) + ++this.clock);
  }

  private put(row: PayoutRow): PayoutRow {
    this.rows.set(row.id, row);
    return { ...row };
  }

  insertIntent: PayoutStore["insertIntent"] = async (p) => {
    if ([...this.rows.values()].some((r) => r.org_id === p.org_id && r.livemode === p.livemode && r.reference_id === p.reference_id)) return undefined;
    const at = this.tick();
    return this.put({
      ...p,
      wallet_id: null,
      status: p.status ?? "posting",
      risk_evaluation_id: p.risk_evaluation_id ?? null,
      transaction_id: null,
      previous_balance: null,
      new_balance: null,
      refusal_code: null,
      ach_file_id: null,
      trace_number: null,
      bank_transfer_status: null,
      action: null,
      action_at: null,
      return_from: null,
      return_code: null,
      return_fee: cents(0),
      failure_reason: null,
      settle_transaction_id: null,
      return_transaction_id: null,
      created_at: at,
      updated_at: at,
      processing_at: null,
      paid_at: null,
      failed_at: null,
    });
  };

  settleIntent: PayoutStore["settleIntent"] = async (s) => {
    const row = this.rows.get(s.id);
    if (row?.status !== "posting") return undefined;
    const { events, at, previous_balance, new_balance, ...fields } = s;
    this.events.push(...events);
    return this.put({
      ...row,
      ...fields,
      previous_balance: previous_balance as PayoutRow["previous_balance"],
      new_balance: new_balance as PayoutRow["new_balance"],
      paid_at: s.status === "paid" ? at : null,
      bank_transfer_status: row.rail === "bank_ach" ? "awaiting_file" : null,
      updated_at: at,
    });
  };

  findUnderReview: PayoutStore["findUnderReview"] = async (t, evaluationId) =>
    this.copy([...this.rows.values()].find((r) => same(r, t) && r.risk_evaluation_id === evaluationId && r.status === "under_review"));

  releaseReview: PayoutStore["releaseReview"] = async (id) => {
    const row = this.rows.get(id);
    if (row?.status !== "under_review") return undefined;
    return this.put({ ...row, status: "posting", updated_at: this.tick() });
  };

  failUnposted: PayoutStore["failUnposted"] = async (id, from, reason, event) => {
    const row = this.rows.get(id);
    if (row?.status !== from || row.risk_evaluation_id === null) return undefined;
    const at = this.tick();
    const failed = this.put({ ...row, status: "failed", failure_reason: reason, failed_at: at, updated_at: at });
    this.events.push(event(failed));
    return failed;
  };

  findByReference: PayoutStore["findByReference"] = async (t, referenceId) =>
    this.copy([...this.rows.values()].find((r) => same(r, t) && r.reference_id === referenceId));
  findPayout: PayoutStore["findPayout"] = async (t, id) => this.copy([...this.rows.values()].find((r) => same(r, t) && r.id === id));
  findById: PayoutStore["findById"] = async (id) => this.copy(this.rows.get(id));

  retryRefused: PayoutStore["retryRefused"] = async (id) => {
    const row = this.rows.get(id);
    if (row?.status !== "refused") return undefined;
    return this.put({ ...row, status: "posting", refusal_code: null, updated_at: this.tick() });
  };

  discardRefused: PayoutStore["discardRefused"] = async (id) => {
    if (this.rows.get(id)?.status === "refused") this.rows.delete(id);
  };

  refuse: PayoutStore["refuse"] = async (id, code) => {
    const row = this.rows.get(id);
    if (row?.status === "posting") this.put({ ...row, status: "refused", refusal_code: code, updated_at: this.tick() });
  };

  list: PayoutStore["list"] = async (t, f) => {
    const statuses =
      f.status === undefined ? ["posting", "pending", "processing", "paid", "failed"] : f.status === "pending" ? ["posting", "pending"] : [f.status];
    const all = [...this.rows.values()]
      .filter((r) => same(r, t) && statuses.includes(r.status) && (f.participantId === undefined || r.participant_id === f.participantId))
      .reverse();
    return { rows: all.slice(f.offset, f.offset + f.limit), total: all.length };
  };

  stuckPosting: PayoutStore["stuckPosting"] = async (_graceMs, limit) => [...this.rows.values()].filter((r) => r.status === "posting").slice(0, limit);
  stuckActions: PayoutStore["stuckActions"] = async (_graceMs, limit) => [...this.rows.values()].filter((r) => r.action !== null).slice(0, limit);

  markAction: PayoutStore["markAction"] = async (id, action, from, fields = {}) => {
    const row = this.rows.get(id);
    if (row === undefined || row.action !== null || !from.includes(row.status) || row.rail !== "bank_ach") return undefined;
    const at = this.tick();
    return this.put({
      ...row,
      action,
      action_at: at,
      return_code: fields.return_code ?? null,
      return_from: fields.return_from ?? null,
      return_fee: cents(Math.min(fields.return_fee ?? 0, row.net_amount)),
      failure_reason: fields.failure_reason ?? row.failure_reason,
      updated_at: at,
    });
  };

  /** Per `${org}:${livemode}`: the org's return fee. */
  readonly returnFees = new Map<string, number>();
  returnFee: PayoutStore["returnFee"] = async (t) => this.returnFees.get(`${t.orgId}:${t.livemode}`) ?? 0;

  unfiledOf: PayoutStore["unfiledOf"] = async (t, participantId) =>
    [...this.rows.values()]
      .filter(
        (r) =>
          r.org_id === t.orgId &&
          r.livemode === t.livemode &&
          r.participant_id === participantId &&
          r.status === "pending" &&
          r.rail === "bank_ach" &&
          r.action === null,
      )
      .map((r) => ({ ...r }));

  finishAction: PayoutStore["finishAction"] = async (id, action, fields, event) => {
    const row = this.rows.get(id);
    if (row?.action !== action) return undefined;
    const settle = action === "settle";
    const at = this.tick();
    this.events.push(event);
    if (fields.disable_bank_account !== undefined) this.disableAccount?.(row, fields.disable_bank_account);
    return this.put({
      ...row,
      status: fields.status,
      action: null,
      action_at: null,
      bank_transfer_status: fields.bank_transfer_status,
      settle_transaction_id: settle ? fields.transaction_id : row.settle_transaction_id,
      return_transaction_id: settle ? row.return_transaction_id : fields.transaction_id,
      failure_reason: fields.failure_reason ?? row.failure_reason,
      paid_at: settle ? at : row.paid_at,
      failed_at: settle ? row.failed_at : at,
      updated_at: at,
    });
  };

  dueForSettlement: PayoutStore["dueForSettlement"] = async (before, limit) =>
    [...this.rows.values()]
      .filter((r) => r.status === "processing" && r.action === null && r.processing_at !== null && r.processing_at < before)
      .slice(0, limit);

  findByTrace: PayoutStore["findByTrace"] = async (trace) => this.copy([...this.rows.values()].find((r) => r.livemode && r.trace_number === trace));

  private copy(row: PayoutRow | undefined): PayoutRow | undefined {
    return row === undefined ? undefined : { ...row };
  }

  /** Puts a row as an earlier step (or a test's setup) left it. */
  seed(row: PayoutRow): void {
    this.rows.set(row.id, { ...row });
  }
}

export class FakeBankAccountStore implements BankAccountStore {
  readonly rows: BankAccountRow[] = [];
  readonly events: NewEvent[] = [];

  find: BankAccountStore["find"] = async (t, participantId) => this.rows.find((r) => same(r, t) && r.participant_id === participantId);

  save: BankAccountStore["save"] = async (t, participantId, id, values, eventOf) => {
    const existing = this.rows.findIndex((r) => same(r, t) && r.participant_id === participantId);
    const at = new Date();
    const before = this.rows[existing];
    const row: BankAccountRow =
      before === undefined
        ? { id, org_id: t.orgId, livemode: t.livemode, participant_id: participantId, ...values, ...ACTIVE, created_at: at, updated_at: at }
        : { ...before, ...values, ...ACTIVE, updated_at: at };
    if (before === undefined) this.rows.push(row);
    else this.rows[existing] = row;
    this.events.push(eventOf(row));
    return { row, created: before === undefined };
  };

  correct: BankAccountStore["correct"] = async (t, participantId, expectedSealed, values, eventOf) => {
    const i = this.rows.findIndex((r) => same(r, t) && r.participant_id === participantId && r.sealed === expectedSealed);
    const before = this.rows[i];
    if (before === undefined) return undefined;
    const row: BankAccountRow = { ...before, ...values, updated_at: new Date() };
    this.rows[i] = row;
    this.events.push(eventOf(row));
    return row;
  };

  /** As the payout store's finish statement does: only the active account that is still the payout's destination. */
  disable(payout: PayoutRow, d: NonNullable<ActionOutcome["disable_bank_account"]>): void {
    const i = this.rows.findIndex((r) => r.id === d.id);
    const r = this.rows[i];
    if (r === undefined || r.status !== "active" || r.participant_id !== payout.participant_id) return;
    if (r.routing_number !== payout.dest_routing_number || r.account_type !== payout.dest_account_type || r.last4 !== payout.dest_last4) return;
    if (r.updated_at > payout.created_at) return;
    this.rows[i] = { ...r, status: "disabled", disabled_reason: d.reason, disabled_at: new Date(), disabled_by_payout_id: payout.id, updated_at: new Date() };
    this.events.push({
      type: "bank_account.updated",
      org_id: d.event.org_id,
      livemode: d.event.livemode,
      data: (d.event.payload as { data: Record<string, unknown> }).data,
    });
  }
}

const ACTIVE = { status: "active" as const, disabled_reason: null, disabled_at: null, disabled_by_payout_id: null };

export type PostBehaviour = (req: PostRequestInput) => LedgerPosted | Error;

/** The ledger: wallets by participant, and what each post answers (by default it moves the money). */
export class FakeLedger implements LedgerClient {
  readonly posts: PostRequestInput[] = [];
  readonly participants = new Map<string, LedgerParticipant>();
  readonly wallets = new Map<string, LedgerWallet>();
  /** Each wallet's entries, oldest first. */
  readonly entries = new Map<string, WalletEntry[]>();
  /** Replaced by a test to refuse or not answer. */
  answer: PostBehaviour = (req) => posted(req, this.walletOf(req));

  addCreator(participantId: string, available: number, status = "active"): LedgerWallet {
    const id = `00000000-0000-4000-8000-${String(this.wallets.size + 1).padStart(12, "0")}`;
    const wallet: LedgerWallet = {
      id,
      wallet_type: "creator_earnings",
      participant_id: participantId,
      status,
      balance: available,
      held_amount: 0,
      available_balance: available,
      payout_supported: true,
    };
    this.wallets.set(id, wallet);
    this.participants.set(participantId, { id: participantId, wallet_id: id, available_balance_cents: available });
    return wallet;
  }

  private walletOf(req: PostRequestInput): LedgerWallet | undefined {
    const pid = (req.metadata as { participant_id?: string } | undefined)?.participant_id;
    const p = pid === undefined ? undefined : this.participants.get(pid);
    return p === undefined ? undefined : this.wallets.get(p.wallet_id);
  }

  post: LedgerClient["post"] = async (req) => {
    this.posts.push(req);
    const out = this.answer(req);
    if (out instanceof Error) throw out;
    return out;
  };

  /** Per org: how far its sandbox clock runs ahead, as the ledger would answer. */
  readonly clockAdvance = new Map<string, number>();
  sandboxAdvance: LedgerClient["sandboxAdvance"] = async (t) => this.clockAdvance.get(t.orgId) ?? 0;

  getParticipant: LedgerClient["getParticipant"] = async (_t, participantId) => {
    const p = this.participants.get(participantId);
    if (p === undefined) throw new DomainError("participant_not_found", `Participant ${participantId} not found`);
    return p;
  };

  /** Each participant read as getParticipant reads it, so a test that makes one read fail affects that one alone. */
  participantBalances: LedgerClient["participantBalances"] = async (t, participantIds) => {
    const read = await Promise.allSettled(participantIds.map((id) => this.getParticipant(t, id)));
    return new Map(read.flatMap((r) => (r.status === "fulfilled" ? [[r.value.id, r.value] as const] : [])));
  };

  getWallet: LedgerClient["getWallet"] = async (_t, walletId) => {
    const w = this.wallets.get(walletId);
    if (w === undefined) throw new DomainError("wallet_not_found", `Wallet ${walletId} not found`);
    return w;
  };

  listWalletEntries: LedgerClient["listWalletEntries"] = async (_t, walletId, page) => {
    const all = [...(this.entries.get(walletId) ?? [])].reverse();
    return { entries: all.slice(page.offset, page.offset + page.limit), total: all.length };
  };

  /**
   * One transaction's entries on a participant's wallet (signed amounts: + credits, − debits), moving its balance
   * and its available balance as the ledger would.
   */
  record(
    participantId: string,
    kind: string,
    referenceId: string,
    amounts: readonly number[],
    at: Date,
    transactionId = `txn_${referenceId.replace(/[^a-z0-9]/gi, "")}`,
  ): void {
    const p = this.participants.get(participantId);
    const w = p === undefined ? undefined : this.wallets.get(p.wallet_id);
    if (p === undefined || w === undefined) throw new Error(`no participant ${participantId}`);
    const list = this.entries.get(w.id) ?? [];
    for (const a of amounts) {
      w.balance += a;
      w.available_balance += a;
      p.available_balance_cents += a;
      list.push({
        entry_id: `ent_${list.length + 1}_${w.id.slice(-4)}`,
        entry_type: a >= 0 ? "credit" : "debit",
        amount: Math.abs(a),
        transaction_id: transactionId,
        reference_id: referenceId,
        transaction_type: kind,
        description: null,
        balance_after: w.balance,
        created_at: at.toISOString(),
      });
    }
    this.entries.set(w.id, list);
  }
}

/** What the ledger answers a post that moved `amount` out of `wallet` (its balance after). */
export function posted(req: PostRequestInput, wallet: LedgerWallet | undefined): LedgerPosted {
  const amount = req.amount ?? 0;
  const wallets: LedgerPosted["wallets"] = {};
  if (wallet !== undefined && req.kind === "payout") {
    wallet.balance -= amount;
    wallet.available_balance -= amount;
    wallets[wallet.id] = { balance: wallet.balance, held_amount: 0, available_balance: wallet.available_balance };
  }
  return {
    transaction_id: `txn_${req.reference_id.replace(/[^a-z0-9]/gi, "")}`,
    kind: req.kind,
    reference_id: req.reference_id,
    amount,
    created_at: new Date().toISOString(),
    wallets,
    holds_created: [],
    holds_released: [],
    extra: {},
    duplicate: false,
  };
}

const keyOf = (k: ScheduleKey) => `${k.org_id}|${String(k.livemode)}|${k.participant_id}`;

/** Schedules and their runs, with the claim rules of the SQL (a claimed schedule is not claimed again). */
export class FakeScheduleStore implements ScheduleStore {
  readonly rows = new Map<string, ScheduleRow & { claim: string | null }>();
  readonly runs = new Map<string, ScheduleRun>();
  readonly events: NewEvent[] = [];

  find: ScheduleStore["find"] = async (t, participantId) => {
    const r = this.rows.get(keyOf({ org_id: t.orgId, livemode: t.livemode, participant_id: participantId }));
    if (r === undefined) return undefined;
    const { claim: _c, ...row } = r;
    return row;
  };

  save: ScheduleStore["save"] = async (t, participantId, v) => {
    const key = { org_id: t.orgId, livemode: t.livemode, participant_id: participantId };
    const at = new Date();
    const row = { ...key, ...v, created_at: this.rows.get(keyOf(key))?.created_at ?? at, updated_at: at };
    this.rows.set(keyOf(key), { ...row, claim: null });
    return { ...row };
  };

  claimDue: ScheduleStore["claimDue"] = async (cutoff, after, limit, token) => {
    const due = [...this.rows.values()]
      .filter((r) => {
        const ahead = r.livemode ? 0 : (cutoff.advanced.get(r.org_id) ?? 0);
        return r.next_run_at !== null && r.next_run_at.getTime() <= cutoff.at.getTime() + ahead * 1000 && r.claim === null;
      })
      .filter((r) => after === undefined || keyOf(r) > keyOf(after))
      .sort((a, b) => (keyOf(a) < keyOf(b) ? -1 : 1))
      .slice(0, limit);
    for (const r of due) r.claim = token;
    return due.map(({ claim: _c, ...row }) => ({ ...row }));
  };

  findRuns: ScheduleStore["findRuns"] = async (periods) => periods.flatMap((p) => this.runs.get(`${keyOf(p)}|${p.period}`) ?? []);

  settle: ScheduleStore["settle"] = async (token, outcomes) =>
    outcomes.map(({ key, run, event, next }) => {
      const r = this.rows.get(keyOf(key));
      if (r?.claim === token) {
        r.claim = null;
        if (next !== undefined) r.next_run_at = next;
      }
      if (run === undefined || this.runs.has(`${keyOf(run)}|${run.period}`)) return false;
      this.runs.set(`${keyOf(run)}|${run.period}`, run);
      if (event !== undefined) this.events.push(event);
      return true;
    });
}

/** A clock the test sets: real time `base`, and how far each org's sandbox is ahead. */
export class FakeClock implements TenantClock {
  base = new Date(Date.UTC(2026, 10, 27, 12));
  readonly ahead = new Map<string, number>();
  now: TenantClock["now"] = (t) => new Date(this.base.getTime() + (t.livemode ? 0 : (this.ahead.get(t.orgId) ?? 0)) * 1000);
  advanced: TenantClock["advanced"] = () => this.ahead;
  sync: TenantClock["sync"] = (orgId, s) => {
    if (s > (this.ahead.get(orgId) ?? 0)) this.ahead.set(orgId, s);
  };
}

export class FakeCompliance implements ComplianceDirectory {
  readonly creators = new Map<string, CreatorCompliance>();
  business = "pending";
  /** Participants with a certified W-9 at the tax service. */
  readonly w9 = new Set<string>();
  taxProfileCertified: ComplianceDirectory["taxProfileCertified"] = async (_t, participantId) => this.w9.has(participantId);
  creator: ComplianceDirectory["creator"] = async (_t, participantId) => this.creators.get(participantId) ?? { status: "not_started", tax_certified: false };
  businessStatus: ComplianceDirectory["businessStatus"] = async () => this.business;
}

const unused = (port: string) => () => {
  throw new Error(`${port} is not used by this test`);
};

/** A rail that is configured (live payouts are allowed) but never asked for a file here. */
export const idleRail: BankRail = {
  traceNumber: unused("rail.traceNumber"),
  effectiveDate: unused("rail.effectiveDate"),
  fileName: unused("rail.fileName"),
  render: unused("rail.render"),
  deliver: unused("rail.deliver"),
  parseReturns: unused("rail.parseReturns"),
};

export interface Fakes {
  deps: PayoutsDeps;
  payouts: FakePayoutStore;
  bankAccounts: FakeBankAccountStore;
  ledger: FakeLedger;
  compliance: FakeCompliance;
  schedules: FakeScheduleStore;
  clock: FakeClock;
  sealer: Sealer;
  /** Where each crash-point hook ran, in order. */
  hooks: string[];
}

export function fakes(overrides: Partial<PayoutsDeps> = {}): Fakes {
  const payouts = new FakePayoutStore();
  const bankAccounts = new FakeBankAccountStore();
  payouts.disableAccount = (payout, d) => bankAccounts.disable(payout, d);
  const ledger = new FakeLedger();
  const compliance = new FakeCompliance();
  const schedules = new FakeScheduleStore();
  const clock = new FakeClock();
  const sealer = new Sealer(parseKeyRing(generateKeyRingEntry("t1")));
  const hooks: string[] = [];
  // No file waits for delivery; a cut is not what these tests drive.
  const achFiles: AchFileStore = { cut: unused("achFiles.cut"), undelivered: async () => [], markDelivered: unused("achFiles.markDelivered") };
  const sealedValues: SealedValueStore = { batch: unused("sealedValues.batch") };
  const deps: PayoutsDeps = {
    payouts,
    bankAccounts,
    achFiles,
    sealedValues,
    schedules,
    clock,
    ledger,
    compliance,
    risk: { check: async () => ({ decision: "allow", evaluationId: "feval_fake", failedOpen: false }) },
    sealer,
    rail: idleRail,
    log: createLogger({ service: "payouts-test", level: "silent" }),
    now: () => new Date(Date.UTC(2026, 10, 27, 12)),
    afterIntent: async () => void hooks.push("afterIntent"),
    afterLedgerPost: async () => void hooks.push("afterLedgerPost"),
    settlementDays: 2,
    fileEntriesMax: 100,
    ...overrides,
  };
  return { deps, payouts, bankAccounts, ledger, compliance, schedules, clock, sealer, hooks };
}
