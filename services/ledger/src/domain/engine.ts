/**
 * The posting rules: the one place that decides whether a posting request may apply and what it changes. Pure
 * (no I/O, no clock, no randomness): the transaction code (usecases/commit.ts) reads and locks the rows a
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
 */
import { cents, DomainError, type AccountRef, type Cents, type PostRequest, type SystemAccountType } from "@treasury/contracts";
import { NORMAL_SIDE, type Side, type WalletType } from "./accounts.ts";
import { available, InvariantViolation, planPostings, walletStateOk, type AccountState, type PlannedEntry, type ResolvedPosting } from "./posting.ts";

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

/**
 * Who covers what the postings take from a creator wallet: the sale's hold first (while it is still held), then
 * the available balance; a shortfall is debited to the platform-funded creator_receivable instead, which the
 * creator repays from later earnings. Wallets never go negative.
 */
export interface Cover {
  walletId: string;
  holdId: string | null;
  receivableId: string;
  /** Why the hold shrinks or ends (on its hold.released event). */
  reason: string;
  /** Refuse (insufficient_balance) instead of booking a shortfall to the receivable. */
  refuseShortfall?: boolean;
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

/** Applies one posting request to the view's state; nothing in the view changes. */
export function applyPosting(req: PostRequest, view: LedgerView, derived?: DerivedChanges): Applied | DomainError {
  const wallets = new Map<string, WalletState>();
  const systemNormals = new Map<string, Side>();
  const accounts = new Map<string, AccountState>();
  const resolve = (ref: AccountRef): string | DomainError => {
    if ("system" in ref) {
      const id = view.systemAccountId(ref.system, ref.entity_id ?? "");
      if (id === undefined) throw new InvariantViolation(`system account ${ref.system} was not ensured`);
      systemNormals.set(id, NORMAL_SIDE[ref.system]);
      return id;
    }
    const id = "wallet_id" in ref ? ref.wallet_id.toLowerCase() : view.participantWalletId(ref.participant_id);
    const w = id === undefined ? undefined : view.wallet(id);
    if (w === undefined || w.orgId !== req.org_id || w.livemode !== req.livemode) return notFound(ref);
    wallets.set(w.id, w);
    return w.id;
  };

  const postings: ResolvedPosting[] = [];
  const moving = new Set<string>();
  for (const [i, p] of req.postings.entries()) {
    const debit = resolve(p.debit);
    if (debit instanceof DomainError) return debit;
    const credit = resolve(p.credit);
    if (credit instanceof DomainError) return credit;
    if (debit === credit) {
      return new DomainError("validation_error", "A posting may not debit and credit the same account", {
        details: [{ path: `postings.${i}`, message: "debit and credit name the same account" }],
      });
    }
    postings.push({ debit, credit, amount: cents(p.amount) });
    for (const id of [debit, credit]) if (wallets.has(id)) moving.add(id);
  }
  const holdsCreated: Applied["holdsCreated"] = [];
  for (const h of req.holds_create) {
    const id = resolve(h.wallet);
    if (id instanceof DomainError) return id;
    const target = h.release_transfer_to_participant_id;
    if (target !== undefined && !view.participantExists(target)) return new DomainError("participant_not_found", `Participant ${target} not found`);
    moving.add(id);
    holdsCreated.push({ walletId: id, participantId: wallets.get(id)?.participantId ?? null });
  }
  const holdsReleased: ReleasedHold[] = [];
  for (const r of req.holds_release) {
    const hold = view.hold(r.hold_id);
    if (hold === undefined) return new DomainError("hold_not_found", `Hold ${r.hold_id} not found`);
    if (hold.status !== "held") {
      return new DomainError("hold_already_released", `Hold ${hold.id} was already released`, { extra: { hold_id: hold.id, release_id: hold.releaseId } });
    }
    holdsReleased.push({ hold, transferExecuted: r.transfer_executed });
  }
  const holdsReduced: Applied["holdsReduced"] = [];
  let covered: Applied["covered"];
  let derivedPostings = derived?.postings ?? [];
  if (derived?.cover !== undefined) {
    const c = coverCreatorPart(derivedPostings, derived.cover, view);
    if (c.shortfall > 0 && derived.cover.refuseShortfall === true) {
      const w = view.wallet(derived.cover.walletId);
      if (w === undefined) throw new InvariantViolation(`creator wallet ${derived.cover.walletId} was not locked`);
      return insufficient(w, c.shortfall + available(w));
    }
    derivedPostings = c.postings;
    covered = { fromHold: c.fromHold, shortfall: c.shortfall };
    if (c.hold !== undefined && c.fromHold > 0) {
      if (c.fromHold === c.hold.amount) holdsReleased.push({ hold: c.hold, transferExecuted: false, reason: derived.cover.reason });
      else holdsReduced.push({ hold: c.hold, by: c.fromHold });
    }
  }
  for (const p of derivedPostings) {
    for (const id of [p.debit, p.credit]) {
      const w = view.wallet(id);
      const normal = w === undefined ? view.systemAccountNormal(id) : undefined;
      if (w !== undefined) {
        wallets.set(id, w);
        moving.add(id);
      } else if (normal !== undefined) systemNormals.set(id, normal);
      else throw new InvariantViolation(`derived posting names unknown account ${id}`);
    }
    postings.push(p);
  }
  for (const { hold } of [...holdsReleased, ...holdsReduced]) {
    const w = view.wallet(hold.walletId);
    if (w === undefined) throw new InvariantViolation(`wallet ${hold.walletId} of hold ${hold.id} was not locked`);
    wallets.set(w.id, w);
  }

  for (const id of moving) {
    const w = wallets.get(id);
    if (w !== undefined && w.status !== "active") return new DomainError("wallet_not_active", `Wallet ${id} is ${w.status}`, { extra: { wallet_id: id } });
  }
  for (const pre of req.preconditions) {
    const id = resolve(pre.wallet);
    if (id instanceof DomainError) return id;
    const w = wallets.get(id);
    if (w === undefined) throw new InvariantViolation(`precondition wallet ${id} not resolved`);
    if (available(w) < pre.available_gte) return insufficient(w, pre.available_gte);
  }

  // Hold changes move held_amount before the postings apply.
  for (const w of wallets.values()) accounts.set(w.id, { id: w.id, normal: w.normal, isWallet: true, balance: w.balance, held: w.held });
  const holdDelta = (walletId: string, delta: number): void => {
    const a = accounts.get(walletId);
    if (a === undefined) throw new InvariantViolation(`hold wallet ${walletId} not resolved`);
    a.held += delta;
  };
  for (const { hold } of holdsReleased) holdDelta(hold.walletId, -hold.amount);
  for (const { hold, by } of holdsReduced) holdDelta(hold.walletId, -by);
  for (const [i, h] of req.holds_create.entries()) holdDelta(holdsCreated[i]?.walletId ?? "", h.amount);
  for (const [id, normal] of systemNormals) accounts.set(id, { id, normal, isWallet: false, balance: 0, held: 0 });

  let plan = planPostings(postings, accounts);
  const recoveries = recoveriesOf(wallets, plan.wallets, accounts, view);
  if (recoveries.length > 0) {
    for (const r of recoveries) accounts.set(r.receivableId, { id: r.receivableId, normal: "debit", isWallet: false, balance: 0, held: 0 });
    plan = planPostings([...postings, ...recoveries.map((r) => ({ debit: r.walletId, credit: r.receivableId, amount: r.amount }))], accounts);
  }
  const after = new Map<string, { balance: Cents; held: Cents }>();
  for (const [id, w] of wallets) {
    const state = plan.wallets.get(id) ?? accounts.get(id);
    if (state === undefined) throw new InvariantViolation(`wallet ${id} has no state`);
    if (!walletStateOk(state)) return insufficient(w);
    after.set(id, { balance: cents(state.balance), held: cents(state.held) });
  }
  return {
    entries: plan.entries,
    wallets: after,
    systemDeltas: plan.systemDeltas,
    holdsCreated,
    holdsReleased,
    holdsReduced,
    covered,
    recoveries: recoveries.map(({ participantId, receivableId, amount }) => ({ participantId, receivableId, amount })),
    amount: headlineAmount(req),
  };
}

/**
 * Repayments (creator wallet → its creator_receivable) for creator wallets whose available balance this request
 * raises: new earnings, or held earnings released. Earnings credited onto a hold repay when the hold is
 * released ("before they become available"), never from what was available before the request.
 */
function recoveriesOf(
  wallets: ReadonlyMap<string, WalletState>,
  planned: ReadonlyMap<string, AccountState>,
  accounts: ReadonlyMap<string, AccountState>,
  view: LedgerView,
): (Recovery & { walletId: string })[] {
  const out: (Recovery & { walletId: string })[] = [];
  for (const w of wallets.values()) {
    if (w.accountType !== "creator_earnings" || w.participantId === null) continue;
    const after = planned.get(w.id) ?? accounts.get(w.id);
    if (after === undefined) continue;
    const freed = available(after) - available(w);
    if (freed <= 0) continue;
    const debt = view.receivable(w.participantId);
    if (debt === undefined || debt.outstanding <= 0) continue;
    const amount = Math.min(debt.outstanding, freed, available(after));
    if (amount > 0) out.push({ walletId: w.id, participantId: w.participantId, receivableId: debt.id, amount: cents(amount) });
  }
  return out;
}

/**
 * The creator's part of a sale taken back: the net amount the postings take from the creator wallet comes from
 * the sale's hold first, then the available balance; any shortfall is debited to creator_receivable instead of
 * the wallet (the platform advances it).
 */
export function coverCreatorPart(
  postings: readonly ResolvedPosting[],
  c: Cover,
  view: Pick<LedgerView, "wallet" | "hold">,
): { postings: ResolvedPosting[]; fromHold: Cents; shortfall: Cents; hold: HoldState | undefined } {
  let take = 0;
  for (const p of postings) {
    if (p.debit === c.walletId) take += p.amount;
    if (p.credit === c.walletId) take -= p.amount;
  }
  const none = { postings: [...postings], fromHold: cents(0), shortfall: cents(0), hold: undefined };
  if (take <= 0) return none;
  const wallet = view.wallet(c.walletId);
  if (wallet === undefined) throw new InvariantViolation(`creator wallet ${c.walletId} was not locked`);
  const hold = c.holdId === null ? undefined : view.hold(c.holdId);
  const fromHold = hold !== undefined && hold.status === "held" ? Math.min(take, hold.amount) : 0;
  const availableNow = wallet.balance - (wallet.held - fromHold);
  const shortfall = Math.max(0, take - Math.max(0, availableNow));
  if (shortfall === 0) return { postings: [...postings], fromHold: cents(fromHold), shortfall: cents(0), hold };
  let left = shortfall;
  const out: ResolvedPosting[] = [];
  for (const p of postings) {
    if (left > 0 && p.debit === c.walletId) {
      const moved = Math.min(left, p.amount);
      left -= moved;
      if (p.amount - moved > 0) out.push({ ...p, amount: cents(p.amount - moved) });
      out.push({ debit: c.receivableId, credit: p.credit, amount: cents(moved) });
    } else out.push(p);
  }
  return { postings: out, fromHold: cents(fromHold), shortfall: cents(shortfall), hold };
}
