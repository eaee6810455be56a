/**
 * The posting rules: the one place that decides whether a posting request may apply and what it changes. Pure
 * (no I/O, no clock, no randomness): the transaction code (commit.ts, read.ts) reads and locks the rows a
 * request names, hands them over as a LedgerView, and writes what comes back. A single post and a
 * group-committed batch both come through here, so every rule exists once:
 *
 * - references resolve within the request's org and environment (a wallet of another org is not found);
 * - a posting never debits and credits the same account;
 * - holds to release exist and are still held; a hold's release transfer names an existing participant;
 * - money moves only through active wallets (releasing a hold on a frozen wallet is allowed: it moves nothing);
 * - preconditions (available_gte) hold on the state before the request;
 * - hold changes apply first (releases, creations, and those of in-process extensions), then the postings;
 * - a creator who owes the platform (creator_receivable) repays from what the request makes available;
 * - no wallet ends negative or below its holds.
 *
 * applyPosting runs these steps in this order (the first refusal is the answer): resolvePostings, resolveHolds,
 * applyDerived, checkWallets, then settle.
 */
import { cents, DomainError, type AccountRef, type Cents, type PostRequest, type SystemAccountType } from "@treasury/contracts";
import { NORMAL_SIDE, type Side, type WalletType } from "../domain/accounts.ts";
import {
  available,
  InvariantViolation,
  planPostings,
  walletStateOk,
  type AccountState,
  type Cover,
  type PlannedEntry,
  type ResolvedPosting,
} from "../domain/posting.ts";
import { coverCreatorPart, recoveriesOf } from "./cover.ts";

/** A locked wallet as the engine sees it: the row's facts and its state before this request. */
export interface WalletState {
  id: string;
  orgId: string;
  livemode: boolean;
  accountType: WalletType;
  participantId: string | null;
  status: string;
  normal: Side;
  balance: Cents;
  held: Cents;
}

/** A locked hold named in holds_release. */
export interface HoldState {
  id: string;
  walletId: string;
  participantId: string | null;
  amount: Cents;
  status: "held" | "released";
  releaseId: string | null;
}

/** What the transaction code read and locked for the request, in the request's org and environment. */
export interface LedgerView {
  systemAccountId(type: SystemAccountType, entityId: string): string | undefined;
  /** The creator_earnings wallet of a participant. */
  participantWalletId(participantId: string): string | undefined;
  /** A locked wallet's current state (earlier requests of the same batch already applied). */
  wallet(id: string): WalletState | undefined;
  hold(id: string): HoldState | undefined;
  /** What a creator owes the platform, as earlier requests of the batch left it. */
  receivable(participantId: string): { id: string; outstanding: Cents } | undefined;
  participantExists(participantId: string): boolean;
  /** The normal side of a system account an in-process extension named by id (references name their type). */
  systemAccountNormal(id: string): Side | undefined;
}

/** Postings an in-process extension computed under its own row locks (accounts by id). */
export interface DerivedChanges {
  postings: readonly ResolvedPosting[];
  /** The creator's part of a sale taken back (a reversal, a refund): see coverCreatorPart. */
  cover?: Cover | undefined;
}

export interface ReleasedHold {
  hold: HoldState;
  transferExecuted: boolean;
  /** Set when a cover used the whole hold. */
  reason?: string;
}

export interface Recovery {
  participantId: string;
  receivableId: string;
  amount: Cents;
}

export interface Applied {
  entries: PlannedEntry[];
  /** New state of every wallet the request involves. */
  wallets: Map<string, { balance: Cents; held: Cents }>;
  /** Net change of each system account, in its normal-side terms. */
  systemDeltas: Map<string, number>;
  /** One per holds_create item, in order: the wallet the hold is on. */
  holdsCreated: { walletId: string; participantId: string | null }[];
  /** One per holds_release item, in order, then a hold a cover used whole. */
  holdsReleased: ReleasedHold[];
  /** Holds a cover used in part. */
  holdsReduced: { hold: HoldState; by: Cents }[];
  /** What a cover took from the hold and booked to the receivable. */
  covered: { fromHold: Cents; shortfall: Cents } | undefined;
  recoveries: Recovery[];
  /** The transaction's headline amount. */
  amount: Cents;
}

function notFound(ref: Exclude<AccountRef, { system: unknown }>): DomainError {
  return "wallet_id" in ref
    ? new DomainError("wallet_not_found", `Wallet ${ref.wallet_id} not found`)
    : new DomainError("participant_not_found", `Participant ${ref.participant_id} not found`);
}

function insufficient(wallet: WalletState, required?: number): DomainError {
  return new DomainError("insufficient_balance", "Insufficient available balance", {
    extra: { wallet_id: wallet.id, available_balance: available(wallet), ...(required === undefined ? {} : { required }) },
  });
}

/** The headline amount: as asked, else the postings' sum, else the holds created. */
export function headlineAmount(req: PostRequest): Cents {
  if (req.amount !== undefined) return cents(req.amount);
  const sum = req.postings.length > 0 ? req.postings.reduce((s, p) => s + p.amount, 0) : req.holds_create.reduce((s, h) => s + h.amount, 0);
  return cents(Number.isSafeInteger(sum) ? sum : 0);
}

/**
 * One request as the steps resolve it: the wallets and system accounts it names, the wallets money moves through,
 * its postings (its own, then an extension's) and its hold changes. Made once per request.
 */
class Draft {
  readonly wallets = new Map<string, WalletState>();
  readonly systemNormals = new Map<string, Side>();
  readonly moving = new Set<string>();
  readonly postings: ResolvedPosting[] = [];
  readonly holdsCreated: Applied["holdsCreated"] = [];
  readonly holdsReleased: ReleasedHold[] = [];
  readonly holdsReduced: Applied["holdsReduced"] = [];
  covered: Applied["covered"];

  constructor(
    readonly req: PostRequest,
    readonly view: LedgerView,
  ) {}

  /** A reference's account id within the request's org and environment, or why it names none. */
  resolve(ref: AccountRef): string | DomainError {
    if ("system" in ref) {
      const id = this.view.systemAccountId(ref.system, ref.entity_id ?? "");
      if (id === undefined) throw new InvariantViolation(`system account ${ref.system} was not ensured`);
      this.systemNormals.set(id, NORMAL_SIDE[ref.system]);
      return id;
    }
    const id = "wallet_id" in ref ? ref.wallet_id.toLowerCase() : this.view.participantWalletId(ref.participant_id);
    const w = id === undefined ? undefined : this.view.wallet(id);
    if (w === undefined || w.orgId !== this.req.org_id || w.livemode !== this.req.livemode) return notFound(ref);
    this.wallets.set(w.id, w);
    return w.id;
  }
}

/** Applies one posting request to the view's state; nothing in the view changes. */
export function applyPosting(req: PostRequest, view: LedgerView, derived?: DerivedChanges): Applied | DomainError {
  const d = new Draft(req, view);
  const refused = resolvePostings(d) ?? resolveHolds(d) ?? applyDerived(d, derived) ?? checkWallets(d);
  return refused ?? settle(d);
}

/** The request's own postings, in order: their accounts resolved, never one account on both sides. */
function resolvePostings(d: Draft): DomainError | undefined {
  for (const [i, p] of d.req.postings.entries()) {
    const debit = d.resolve(p.debit);
    if (debit instanceof DomainError) return debit;
    const credit = d.resolve(p.credit);
    if (credit instanceof DomainError) return credit;
    if (debit === credit) {
      return new DomainError("validation_error", "A posting may not debit and credit the same account", {
        details: [{ path: `postings.${i}`, message: "debit and credit name the same account" }],
      });
    }
    d.postings.push({ debit, credit, amount: cents(p.amount) });
    for (const id of [debit, credit]) if (d.wallets.has(id)) d.moving.add(id);
  }
  return undefined;
}

/** Holds to create (on a resolved wallet, releasing to an existing participant) and to release (still held). */
function resolveHolds(d: Draft): DomainError | undefined {
  for (const h of d.req.holds_create) {
    const id = d.resolve(h.wallet);
    if (id instanceof DomainError) return id;
    const target = h.release_transfer_to_participant_id;
    if (target !== undefined && !d.view.participantExists(target)) return new DomainError("participant_not_found", `Participant ${target} not found`);
    d.moving.add(id);
    d.holdsCreated.push({ walletId: id, participantId: d.wallets.get(id)?.participantId ?? null });
  }
  for (const r of d.req.holds_release) {
    const hold = d.view.hold(r.hold_id);
    if (hold === undefined) return new DomainError("hold_not_found", `Hold ${r.hold_id} not found`);
    if (hold.status !== "held") {
      return new DomainError("hold_already_released", `Hold ${hold.id} was already released`, { extra: { hold_id: hold.id, release_id: hold.releaseId } });
    }
    d.holdsReleased.push({ hold, transferExecuted: r.transfer_executed });
  }
  return undefined;
}

/**
 * An extension's postings (by account id), after its cover decided who gives the creator's part back: the sale's
 * hold, the balance, or the receivable (refused instead when the cover says so). Then every released or reduced
 * hold's wallet joins the request.
 */
function applyDerived(d: Draft, derived: DerivedChanges | undefined): DomainError | undefined {
  let derivedPostings = derived?.postings ?? [];
  if (derived?.cover !== undefined) {
    const c = coverCreatorPart(derivedPostings, derived.cover, d.view);
    if (c.shortfall > 0 && derived.cover.refuseShortfall === true) {
      const w = d.view.wallet(derived.cover.walletId);
      if (w === undefined) throw new InvariantViolation(`creator wallet ${derived.cover.walletId} was not locked`);
      return insufficient(w, c.shortfall + available(w));
    }
    derivedPostings = c.postings;
    d.covered = { fromHold: c.fromHold, shortfall: c.shortfall };
    if (c.hold !== undefined && c.fromHold > 0) {
      if (c.fromHold === c.hold.amount) d.holdsReleased.push({ hold: c.hold, transferExecuted: false, reason: derived.cover.reason });
      else d.holdsReduced.push({ hold: c.hold, by: c.fromHold });
    }
  }
  for (const p of derivedPostings) {
    for (const id of [p.debit, p.credit]) {
      const w = d.view.wallet(id);
      const normal = w === undefined ? d.view.systemAccountNormal(id) : undefined;
      if (w !== undefined) {
        d.wallets.set(id, w);
        d.moving.add(id);
      } else if (normal !== undefined) d.systemNormals.set(id, normal);
      else throw new InvariantViolation(`derived posting names unknown account ${id}`);
    }
    d.postings.push(p);
  }
  for (const { hold } of [...d.holdsReleased, ...d.holdsReduced]) {
    const w = d.view.wallet(hold.walletId);
    if (w === undefined) throw new InvariantViolation(`wallet ${hold.walletId} of hold ${hold.id} was not locked`);
    d.wallets.set(w.id, w);
  }
  return undefined;
}

/** Money moves only through active wallets; preconditions hold on the state before the request. */
function checkWallets(d: Draft): DomainError | undefined {
  for (const id of d.moving) {
    const w = d.wallets.get(id);
    if (w !== undefined && w.status !== "active") return new DomainError("wallet_not_active", `Wallet ${id} is ${w.status}`, { extra: { wallet_id: id } });
  }
  for (const pre of d.req.preconditions) {
    const id = d.resolve(pre.wallet);
    if (id instanceof DomainError) return id;
    const w = d.wallets.get(id);
    if (w === undefined) throw new InvariantViolation(`precondition wallet ${id} not resolved`);
    if (available(w) < pre.available_gte) return insufficient(w, pre.available_gte);
  }
  return undefined;
}

/** Every account's state once the hold changes applied: they move held_amount before the postings apply. */
function accountStates(d: Draft): Map<string, AccountState> {
  const accounts = new Map<string, AccountState>();
  for (const w of d.wallets.values()) accounts.set(w.id, { id: w.id, normal: w.normal, isWallet: true, balance: w.balance, held: w.held });
  const holdDelta = (walletId: string, delta: number): void => {
    const a = accounts.get(walletId);
    if (a === undefined) throw new InvariantViolation(`hold wallet ${walletId} not resolved`);
    a.held += delta;
  };
  for (const { hold } of d.holdsReleased) holdDelta(hold.walletId, -hold.amount);
  for (const { hold, by } of d.holdsReduced) holdDelta(hold.walletId, -by);
  for (const [i, h] of d.req.holds_create.entries()) holdDelta(d.holdsCreated[i]?.walletId ?? "", h.amount);
  for (const [id, normal] of d.systemNormals) accounts.set(id, { id, normal, isWallet: false, balance: 0, held: 0 });
  return accounts;
}

/** The postings planned (with a creator's receivable repaid from what they free), and every wallet's state after. */
function settle(d: Draft): Applied | DomainError {
  const accounts = accountStates(d);
  let plan = planPostings(d.postings, accounts);
  const recoveries = recoveriesOf(d.wallets, plan.wallets, accounts, d.view);
  if (recoveries.length > 0) {
    for (const r of recoveries) accounts.set(r.receivableId, { id: r.receivableId, normal: "debit", isWallet: false, balance: 0, held: 0 });
    plan = planPostings([...d.postings, ...recoveries.map((r) => ({ debit: r.walletId, credit: r.receivableId, amount: r.amount }))], accounts);
  }
  const after = new Map<string, { balance: Cents; held: Cents }>();
  for (const [id, w] of d.wallets) {
    const state = plan.wallets.get(id) ?? accounts.get(id);
    if (state === undefined) throw new InvariantViolation(`wallet ${id} has no state`);
    if (!walletStateOk(state)) return insufficient(w);
    after.set(id, { balance: cents(state.balance), held: cents(state.held) });
  }
  return {
    entries: plan.entries,
    wallets: after,
    systemDeltas: plan.systemDeltas,
    holdsCreated: d.holdsCreated,
    holdsReleased: d.holdsReleased,
    holdsReduced: d.holdsReduced,
    covered: d.covered,
    recoveries: recoveries.map(({ participantId, receivableId, amount }) => ({ participantId, receivableId, amount })),
    amount: headlineAmount(d.req),
  };
}
