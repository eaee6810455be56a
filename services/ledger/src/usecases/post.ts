/**
 * The posting engine: the one way money moves in the ledger. Every money-moving operation and the internal
 * `svc.ledger.post` RPC call `post`.
 *
 * In ONE database transaction it: claims the idempotency key (org, env, kind, reference_id) with a hash of the
 * canonical request; locks the wallets involved in ascending id order, then the holds being released; checks
 * preconditions; releases and creates holds; applies the postings (debits = credits, asserted); checks that
 * no wallet goes negative or below its holds; writes entries with balance_after, the wallets' new balances and
 * the system accounts' shard deltas; stores the result; and writes the outbox events. Nothing is written when
 * any check fails.
 *
 * Errors (DomainError codes): validation_error, idempotency_conflict, insufficient_balance, wallet_not_found,
 * participant_not_found, wallet_not_active, hold_not_found, hold_already_released, duplicate_reference_id
 * (a hold or sale reference already used by another transaction). A broken invariant throws
 * InvariantViolation (a bug: the RPC layer answers internal_error and logs it).
 */
import { DomainError, newId, validationProblem } from "@treasury/contracts";
import { withTx, writeOutbox } from "@treasury/service-kit";
import postgres from "postgres";
import { PostRequest, type AccountRef, type PostOutcome, type PostResult, type WalletAfter, type WalletRef } from "@treasury/contracts";
import { BALANCE_SHARDS } from "../domain/accounts.ts";
import { postRequestHash, requestHash } from "../domain/canonical.ts";
import { available, InvariantViolation, planPostings, transactionPostedData, transactionsPostedData, walletStateOk, type AccountState, type ResolvedPosting } from "../domain/posting.ts";
import { accountKinds, addToShards, creatorReceivable, ensureSystemAccount, findCreatorWallet, findWalletById, lockWallets, updateWalletBalance, type Scope, type WalletRow } from "../store/accounts.ts";
import type { Sql, Tx } from "../store/db.ts";
import { findHoldsByIds, insertHold, lockHolds, markReleased, type HoldRow } from "../store/holds.ts";
import { participantExists } from "../store/participants.ts";
import { insertSale, newSale } from "../store/sales.ts";
import { claimTransaction, insertEntries, setTransactionAmount, storeResult } from "../store/transactions.ts";

/** Serialization failures and deadlocks are retried this many times before the error surfaces. */
const POST_TX_RETRIES = 5;
const CURRENCY = "USD";

export interface PostDeps {
  /** Which balance shard a system-account delta lands on (tests pin it; production spreads at random). */
  pickShard?: () => number;
}

/** Postings computed inside the transaction (under row locks the caller takes), by account id. */
export interface Derived {
  postings: ResolvedPosting[];
  /** Changes to wallets' held_amount from hold rows the hook changed itself (wallet id → delta). */
  heldDeltas?: Map<string, number>;
  /** The transaction's headline amount, when only the hook knows it. */
  amount?: number;
  extra?: Record<string, unknown>;
}

/**
 * In-process extensions of a post (never reachable over RPC). `derive` runs inside the transaction right after
 * the idempotency claim, so it can lock rows (a sale, a bill) and compute postings from what it read; it may
 * lock the wallets it moves (ascending id order) before the engine locks them again. `hashInput` replaces the
 * request as the idempotency hash (what the client asked for, when the postings depend on state).
 */
export interface PostHooks {
  derive?: (tx: Tx, ctx: { transactionId: string; scope: Scope }) => Promise<Derived>;
  hashInput?: unknown;
}

export function parsePostRequest(input: unknown, derived = false): PostRequest {
  const parsed = PostRequest.safeParse(input);
  if (!parsed.success) {
    throw new DomainError("validation_error", "Invalid posting request", { details: validationProblem(parsed.error).details });
  }
  const req = parsed.data;
  if (!derived && req.postings.length === 0 && req.holds_create.length === 0 && req.holds_release.length === 0) {
    throw new DomainError("validation_error", "A posting request must post, create or release something");
  }
  const releaseIds = req.holds_release.map((h) => h.hold_id);
  if (new Set(releaseIds).size !== releaseIds.length) throw new DomainError("validation_error", "holds_release names a hold twice");
  if (req.sale?.hold_index !== undefined && req.sale.hold_index >= req.holds_create.length) {
    throw new DomainError("validation_error", "sale.hold_index does not name a hold in holds_create");
  }
  return req;
}

function refKey(ref: AccountRef): string {
  if ("wallet_id" in ref) return `w:${ref.wallet_id.toLowerCase()}`;
  if ("participant_id" in ref) return `p:${ref.participant_id}`;
  return `s:${ref.system}:${ref.entity_id ?? ""}`;
}

/** Posts a request. Returns the stored result; `duplicate` is true when the key was already posted with the same request. */
export async function post(sql: Sql, input: unknown, deps: PostDeps = {}, hooks: PostHooks = {}): Promise<PostOutcome> {
  const req = parsePostRequest(input, hooks.derive !== undefined);
  const hash = hooks.hashInput === undefined ? postRequestHash(req) : requestHash(hooks.hashInput);
  const scope: Scope = { orgId: req.org_id, livemode: req.livemode };
  const pickShard = deps.pickShard ?? (() => Math.floor(Math.random() * BALANCE_SHARDS));

  // System accounts are created (idempotently) before the transaction, in statements of their own.
  const accounts = new Map<string, AccountState>();
  const refIds = new Map<string, string>();
  for (const ref of allRefs(req)) {
    if (!("system" in ref) || refIds.has(refKey(ref))) continue;
    const acct = await ensureSystemAccount(sql, scope, ref.system, ref.entity_id ?? "");
    refIds.set(refKey(ref), acct.id);
    accounts.set(acct.id, { id: acct.id, normal: acct.normal, isWallet: false, balance: 0, held: 0 });
  }

  try {
    return await withTx(sql, (tx) => postInTx(tx, req, hash, scope, new Map(refIds), new Map(accounts), pickShard, hooks), { retries: POST_TX_RETRIES });
  } catch (e) {
    if (e instanceof postgres.PostgresError && e.code === "23505" && e.constraint_name === "holds_reference_uq") {
      throw new DomainError("duplicate_reference_id", "A hold with this reference_id exists");
    }
    throw e;
  }
}

function allRefs(req: PostRequest): AccountRef[] {
  return [
    ...req.postings.flatMap((p) => [p.debit, p.credit]),
    ...req.holds_create.map((h) => h.wallet),
    ...req.preconditions.map((p) => p.wallet),
  ];
}

async function resolveWalletRef(tx: Tx, scope: Scope, ref: WalletRef): Promise<WalletRow> {
  if ("wallet_id" in ref) {
    const w = await findWalletById(tx, scope, ref.wallet_id);
    if (w === undefined) throw new DomainError("wallet_not_found", `Wallet ${ref.wallet_id} not found`);
    return w;
  }
  const w = await findCreatorWallet(tx, scope, ref.participant_id);
  if (w === undefined) throw new DomainError("participant_not_found", `Participant ${ref.participant_id} not found`);
  return w;
}

async function postInTx(
  tx: Tx,
  req: PostRequest,
  hash: string,
  scope: Scope,
  refIds: Map<string, string>,
  accounts: Map<string, AccountState>,
  pickShard: () => number,
  hooks: PostHooks,
): Promise<PostOutcome> {
  const transactionId = newId("txn");
  const headline =
    req.amount ??
    (req.postings.length > 0
      ? req.postings.reduce((s, p) => s + p.amount, 0)
      : req.holds_create.reduce((s, h) => s + h.amount, 0));
  const claim = await claimTransaction(tx, scope, {
    id: transactionId,
    kind: req.kind,
    referenceId: req.reference_id,
    requestHash: hash,
    amount: Number.isSafeInteger(headline) ? headline : 0,
    description: req.description ?? null,
    metadata: req.metadata ?? {},
    effectiveAt: req.effective_date === undefined ? null : new Date(req.effective_date),
  });
  if (!claim.inserted) {
    if (claim.requestHash !== hash) {
      throw new DomainError("idempotency_conflict", `reference_id ${req.reference_id} was used with a different request`, {
        extra: { existing_transaction_id: claim.id },
      });
    }
    return { duplicate: true, result: claim.result as unknown as PostResult };
  }

  // Resolve wallet references (plain reads: a wallet's identity never changes; its balance is read locked below).
  for (const ref of allRefs(req)) {
    const key = refKey(ref);
    if (refIds.has(key) || "system" in ref) continue;
    refIds.set(key, (await resolveWalletRef(tx, scope, ref)).id);
  }
  const idOf = (ref: AccountRef): string => {
    const id = refIds.get(refKey(ref));
    if (id === undefined) throw new InvariantViolation(`unresolved account reference ${refKey(ref)}`);
    return id;
  };

  for (const [i, p] of req.postings.entries()) {
    if (idOf(p.debit) === idOf(p.credit)) {
      throw new DomainError("validation_error", "A posting may not debit and credit the same account", {
        details: [{ path: `postings.${i}`, message: "debit and credit name the same account" }],
      });
    }
  }

  // In-transaction postings of a hook (reversals, bill payments): their accounts are named by id.
  const derived = hooks.derive === undefined ? undefined : await hooks.derive(tx, { transactionId, scope });
  const derivedWallets = new Set<string>();
  if (derived !== undefined) {
    const ids = [...new Set(derived.postings.flatMap((p) => [p.debit, p.credit]))].filter((id) => !accounts.has(id));
    for (const a of await accountKinds(tx, scope, ids)) {
      if (a.is_wallet) derivedWallets.add(a.id);
      else accounts.set(a.id, { id: a.id, normal: a.normal_side, isWallet: false, balance: 0, held: 0 });
    }
    for (const id of ids) if (!accounts.has(id) && !derivedWallets.has(id)) throw new InvariantViolation(`derived posting names unknown account ${id}`);
    for (const id of derived.heldDeltas?.keys() ?? []) derivedWallets.add(id);
  }

  const releaseIds = req.holds_release.map((h) => h.hold_id);
  const holdsSeen = await findHoldsByIds(tx, scope, releaseIds);
  for (const id of releaseIds) {
    if (!holdsSeen.some((h) => h.id === id)) throw new DomainError("hold_not_found", `Hold ${id} not found`);
  }

  // Lock: wallets in id order, then the holds being released in id order.
  const walletIds = new Set<string>();
  for (const ref of allRefs(req)) if (!("system" in ref)) walletIds.add(idOf(ref));
  for (const h of holdsSeen) walletIds.add(h.wallet_id);
  for (const id of derivedWallets) walletIds.add(id);
  const locked = await lockWallets(tx, scope, [...walletIds].sort());
  if (locked.length !== walletIds.size) throw new InvariantViolation("a resolved wallet vanished before it was locked");
  const wallets = new Map(locked.map((w) => [w.id, w]));
  const holds = await lockHolds(tx, scope, [...releaseIds].sort());
  for (const h of holds) {
    if (h.status !== "held") {
      throw new DomainError("hold_already_released", `Hold ${h.id} was already released`, { extra: { hold_id: h.id, release_id: h.release_id } });
    }
  }

  for (const pre of req.preconditions) {
    const w = wallets.get(idOf(pre.wallet));
    if (w === undefined) throw new InvariantViolation("precondition wallet not locked");
    if (available({ balance: w.balance, held: w.held_amount }) < pre.available_gte) {
      throw new DomainError("insufficient_balance", "Insufficient available balance", {
        extra: { wallet_id: w.id, available_balance: w.balance - w.held_amount, required: pre.available_gte },
      });
    }
  }

  // Start from the locked rows; hold releases and creations move held_amount before the postings apply.
  for (const w of locked) accounts.set(w.id, { id: w.id, normal: w.normal_side, isWallet: true, balance: w.balance, held: w.held_amount });
  const holdDelta = (walletId: string, delta: number): void => {
    const a = accounts.get(walletId);
    if (a === undefined) throw new InvariantViolation(`hold wallet ${walletId} not locked`);
    accounts.set(walletId, { ...a, held: a.held + delta });
  };
  for (const h of holds) holdDelta(h.wallet_id, -h.amount);
  for (const h of req.holds_create) holdDelta(idOf(h.wallet), h.amount);
  for (const [id, delta] of derived?.heldDeltas ?? []) holdDelta(id, delta);

  // Money may only move through active wallets.
  const moving = new Set([...req.postings.flatMap((p) => [p.debit, p.credit]), ...req.holds_create.map((h) => h.wallet)].filter((r) => !("system" in r)).map(idOf));
  for (const p of derived?.postings ?? []) for (const id of [p.debit, p.credit]) if (derivedWallets.has(id)) moving.add(id);
  for (const id of moving) {
    const w = wallets.get(id);
    if (w !== undefined && w.status !== "active") throw new DomainError("wallet_not_active", `Wallet ${id} is ${w.status}`, { extra: { wallet_id: id } });
  }

  const postings: ResolvedPosting[] = [
    ...req.postings.map((p) => ({ debit: idOf(p.debit), credit: idOf(p.credit), amount: p.amount })),
    ...(derived?.postings ?? []),
  ];
  let plan = planPostings(postings, accounts);
  // A creator who owes the platform (creator_receivable, after a reversal it funded) repays from new earnings
  // before they become available: in this same transaction, up to what the credit made available.
  const recovered = await recoverReceivables(tx, scope, locked, plan.wallets, accounts);
  if (recovered.length > 0) plan = planPostings([...postings, ...recovered], accounts);
  const finalWallets = new Map<string, AccountState>();
  for (const id of walletIds) {
    const state = plan.wallets.get(id) ?? accounts.get(id);
    if (state === undefined) throw new InvariantViolation(`wallet ${id} has no state`);
    finalWallets.set(id, state);
    if (!walletStateOk(state)) {
      throw new DomainError("insufficient_balance", "Insufficient available balance", {
        extra: { wallet_id: id, available_balance: (wallets.get(id)?.balance ?? 0) - (wallets.get(id)?.held_amount ?? 0) },
      });
    }
  }

  // Everything checked: write.
  await insertEntries(tx, scope, transactionId, plan.entries);
  for (const [id, state] of finalWallets) {
    const before = wallets.get(id);
    if (before !== undefined && (before.balance !== state.balance || before.held_amount !== state.held)) {
      await updateWalletBalance(tx, scope, id, state.balance, state.held);
    }
  }
  await addToShards(tx, scope, plan.systemDeltas, pickShard);

  const released: HoldRow[] = [];
  for (const r of req.holds_release) {
    released.push(await markReleased(tx, scope, r.hold_id, { releaseId: newId("rel"), transactionId, transferExecuted: r.transfer_executed }));
  }
  const created: HoldRow[] = [];
  for (const [i, h] of req.holds_create.entries()) {
    const target = h.release_transfer_to_participant_id;
    if (target !== undefined && !(await participantExists(tx, scope, target))) {
      throw new DomainError("participant_not_found", `Participant ${target} not found`);
    }
    const walletId = idOf(h.wallet);
    created.push(
      await insertHold(tx, scope, {
        id: newId("hold"),
        walletId,
        participantId: wallets.get(walletId)?.participant_id ?? null,
        amount: h.amount,
        referenceId: h.reference_id ?? `${req.kind}:${req.reference_id}${i > 0 ? `:${i}` : ""}`,
        reasonCode: h.reason_code,
        description: h.description ?? null,
        holdUntil: h.hold_until === undefined ? null : new Date(h.hold_until),
        releaseTransferTo: target ?? null,
        transactionId,
        metadata: h.metadata ?? {},
      }),
    );
  }
  if (req.sale !== undefined) {
    const s = req.sale;
    const holdId = s.hold_index === undefined ? null : (created[s.hold_index]?.id ?? null);
    const ok = await insertSale(tx, scope, newSale(s, transactionId, holdId));
    if (!ok) throw new DomainError("duplicate_reference_id", `Sale ${s.sale_reference} was already recorded`);
  }

  const walletsAfter: Record<string, WalletAfter> = {};
  for (const [id, st] of finalWallets) walletsAfter[id] = { balance: st.balance, held_amount: st.held, available_balance: st.balance - st.held };
  const result: PostResult = {
    transaction_id: transactionId,
    kind: req.kind,
    reference_id: req.reference_id,
    amount: Number.isSafeInteger(headline) ? headline : 0,
    created_at: claim.createdAt.toISOString(),
    wallets: walletsAfter,
    holds_created: created.map((h) => ({ hold_id: h.id, wallet_id: h.wallet_id, participant_id: h.participant_id, amount: h.amount, reference_id: h.reference_id })),
    holds_released: released.map((h) => ({
      hold_id: h.id,
      release_id: h.release_id ?? "",
      wallet_id: h.wallet_id,
      amount: h.amount,
      transfer_executed: h.release_transfer_executed === true,
    })),
    extra: {
      ...(req.result_extra ?? {}),
      ...(derived?.extra ?? {}),
      ...(recovered.length > 0 ? { receivable_recovered: recovered.reduce((s, p) => s + p.amount, 0) } : {}),
    },
  };
  if (derived?.amount !== undefined) {
    result.amount = derived.amount;
    await setTransactionAmount(tx, scope, transactionId, derived.amount);
  }
  await storeResult(tx, scope, transactionId, result as unknown as Record<string, unknown>);
  await writeEvents(tx, scope, result, plan.entries, created, released);
  return { duplicate: false, result };
}

/**
 * Recovery postings (creator wallet → its creator_receivable) for creator wallets whose available balance this
 * transaction raises: new earnings, or held earnings released. Earnings credited onto a hold are recovered
 * when the hold is released, "before they become available" (DESIGN.md), never from what was available before.
 */
async function recoverReceivables(
  tx: Tx,
  scope: Scope,
  locked: readonly WalletRow[],
  planned: ReadonlyMap<string, AccountState>,
  accounts: Map<string, AccountState>,
): Promise<ResolvedPosting[]> {
  const out: ResolvedPosting[] = [];
  for (const w of locked) {
    if (w.account_type !== "creator_earnings" || w.participant_id === null) continue;
    const after = planned.get(w.id) ?? accounts.get(w.id);
    if (after === undefined) continue;
    const freed = available(after) - (w.balance - w.held_amount);
    if (freed <= 0) continue;
    const receivable = await creatorReceivable(tx, scope, w.participant_id);
    if (receivable === undefined || receivable.outstanding <= 0) continue;
    const amount = Math.min(receivable.outstanding, freed, available(after));
    if (amount <= 0) continue;
    accounts.set(receivable.id, { id: receivable.id, normal: "debit", isWallet: false, balance: 0, held: 0 });
    out.push({ debit: w.id, credit: receivable.id, amount });
  }
  return out;
}

async function writeEvents(
  tx: Tx,
  scope: Scope,
  result: PostResult,
  entries: readonly { account_id: string; entry_type: string; amount: number }[],
  created: readonly HoldRow[],
  released: readonly HoldRow[],
): Promise<void> {
  const base = { org_id: scope.orgId, livemode: scope.livemode };
  await writeOutbox(tx, "ledger", {
    ...base,
    type: "ledger.transaction.posted",
    data: transactionsPostedData([transactionPostedData(result, entries)]),
  });
  for (const h of created) {
    await writeOutbox(tx, "ledger", {
      ...base,
      type: "hold.created",
      data: {
        hold_id: h.id,
        participant_id: h.participant_id,
        wallet_id: h.wallet_id,
        amount: h.amount,
        currency: CURRENCY,
        hold_reason_code: h.hold_reason_code,
        hold_until: h.hold_until?.toISOString() ?? null,
        reference_id: h.reference_id,
        transaction_id: h.transaction_id,
      },
    });
  }
  for (const h of released) {
    await writeOutbox(tx, "ledger", {
      ...base,
      type: "hold.released",
      data: {
        hold_id: h.id,
        release_id: h.release_id,
        participant_id: h.participant_id,
        wallet_id: h.wallet_id,
        amount: h.amount,
        currency: CURRENCY,
        transfer_executed: h.release_transfer_executed === true,
        transaction_id: h.release_transaction_id,
      },
    });
  }
}
