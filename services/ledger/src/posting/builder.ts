/**
 * Step 3 of the posting transaction (commit.ts): applies requests one after another, with the rule engine
 * (engine.ts), to the in-memory state of the rows read and locked (read.ts), and collects what the accepted ones
 * write: step 4's one statement (store/batch.ts).
 */
import { cents, DomainError, newId, type PostRequest, type PostResult } from "@treasury/contracts";
import { sortableId } from "../domain/ids.ts";
import { InvariantViolation, transactionPostedData, transactionsPostedData } from "../domain/posting.ts";
import type { LockedSale } from "../store/batch-reads.ts";
import type { BatchEntry, BatchEvent, BatchHold, BatchRelease, BatchSale, BatchWrite } from "../store/batch.ts";
import { newSale } from "../store/sales.ts";
import { applyPosting, type Applied, type DerivedChanges, type HoldState, type LedgerView, type WalletState } from "./engine.ts";
import { holdCreatedEvent, holdReleasedEvent, newHold, postResult, traceOf } from "./outcome.ts";
import { scopeKey, type Pending, type SoloClaim, type Verdict } from "./pending.ts";
import type { Rows } from "./read.ts";
import { requestChanges } from "./refund-changes.ts";
import { RequestView } from "./view.ts";

type PostedGroup = { orgId: string; livemode: boolean; headers: Record<string, string>; items: Record<string, unknown>[] };

export class BatchBuilder {
  private readonly state = new Map<string, WalletState>();
  private readonly holds = new Map<string, HoldState>();
  private readonly entries: BatchEntry[] = [];
  private readonly shardDeltas = new Map<string, number>();
  private readonly transactions: BatchWrite["transactions"][number][] = [];
  private readonly newHolds: BatchHold[] = [];
  private readonly releases: BatchRelease[] = [];
  private readonly reductions: BatchWrite["reductions"][number][] = [];
  private readonly sales: BatchSale[] = [];
  private readonly holdEvents: BatchEvent[] = [];
  /** Sales' remainders as the batch's refunds leave them, and the rows to write. */
  private readonly saleState: Map<string, LockedSale>;
  private readonly saleUpdates = new Map<string, BatchWrite["saleUpdates"][number]>();
  /** One ledger.transaction.posted event per (org, environment) of the batch, listing its transactions. */
  private readonly posted = new Map<string, PostedGroup>();
  /** A batch's one moment; a sandbox request answers it moved by its org's clock (createdAt). */
  private readonly realNow = new Date();

  constructor(
    private readonly rows: Rows,
    private readonly systemIds: ReadonlyMap<string, string>,
    private readonly solo: SoloClaim | undefined,
    private readonly sandboxAdvance: (orgId: string) => number,
  ) {
    for (const w of rows.locked) {
      this.state.set(w.id, {
        id: w.id,
        orgId: w.org_id,
        livemode: w.livemode,
        accountType: w.account_type,
        participantId: w.participant_id,
        status: w.status,
        normal: w.normal_side,
        balance: w.balance,
        held: w.held_amount,
      });
    }
    for (const h of rows.holds.values())
      this.holds.set(h.id, { id: h.id, walletId: h.wallet_id, participantId: h.participant_id, amount: h.amount, status: h.status, releaseId: h.release_id });
    this.saleState = new Map(rows.sales);
  }

  /**
   * What the request answers as created_at: the claim's stored time when it ran alone; else the batch's moment on
   * the tenant's clock, as the write stamps its rows (store/batch.ts adds the org's sandbox advance in SQL).
   */
  private createdAt(p: Pending): string {
    if (this.solo !== undefined) return this.solo.createdAt;
    const advance = p.req.livemode ? 0 : this.sandboxAdvance(p.req.org_id);
    return new Date(this.realNow.getTime() + advance * 1000).toISOString();
  }

  private view(req: PostRequest): LedgerView {
    return new RequestView(this.rows, this.systemIds, this.state, this.holds, req.org_id, req.livemode);
  }

  apply(p: Pending): Verdict {
    const own = requestChanges(p, this.solo, this.saleState);
    if (own instanceof DomainError) return { ok: false, error: own };
    const derived = own.changes;
    const changes: DerivedChanges | undefined = derived === undefined ? undefined : { postings: derived.postings, cover: derived.cover };
    const applied = applyPosting(p.req, this.view(p.req), changes);
    if (applied instanceof DomainError) return { ok: false, error: applied };
    if (own.sale !== undefined) this.updateSale(own.sale.key, own.sale.after);
    const txnId = this.solo?.transactionId ?? sortableId("txn");
    this.applyState(p, applied);
    this.addEntries(p, applied, txnId);
    const created = this.createHolds(p, applied, txnId);
    const released = this.releaseHolds(p, applied, txnId);
    if (p.req.sale !== undefined) {
      const s = p.req.sale;
      const holdId = s.hold_index === undefined ? null : (created[s.hold_index]?.hold_id ?? null);
      this.sales.push({ orgId: p.req.org_id, livemode: p.req.livemode, ...newSale(s, txnId, holdId) });
    }
    const result = postResult(p, applied, txnId, this.createdAt(p), created, released, derived);
    this.addTransaction(p, result, txnId);
    this.addPosted(p, transactionPostedData(result, applied.entries));
    return { ok: true, outcome: { duplicate: false, result } };
  }

  private updateSale(key: string, a: LockedSale): void {
    this.saleState.set(key, a);
    this.saleUpdates.set(key, {
      orgId: a.org_id,
      livemode: a.livemode,
      saleReference: a.sale_reference,
      refunded: a.refunded_amount,
      creatorRefunded: a.creator_refunded,
      platformRefunded: a.platform_refunded,
    });
  }

  /** The wallets, receivables and system accounts as the request leaves them, for the batch's next requests. */
  private applyState(p: Pending, applied: Applied): void {
    for (const [id, st] of applied.wallets) {
      const w = this.state.get(id);
      if (w === undefined) throw new InvariantViolation(`applied wallet ${id} was not locked`);
      this.state.set(id, { ...w, balance: st.balance, held: st.held });
    }
    for (const r of applied.recoveries) {
      const debt = this.rows.owed.get(scopeKey(p.req.org_id, p.req.livemode, r.participantId));
      if (debt !== undefined) debt.outstanding -= r.amount;
    }
    for (const [id, d] of applied.systemDeltas) this.shardDeltas.set(id, (this.shardDeltas.get(id) ?? 0) + d);
  }

  private addEntries(p: Pending, applied: Applied, txnId: string): void {
    for (const e of applied.entries) {
      this.entries.push({
        id: sortableId("ent"),
        orgId: p.req.org_id,
        livemode: p.req.livemode,
        transactionId: txnId,
        accountId: e.account_id,
        entryType: e.entry_type,
        amount: e.amount,
        balanceAfter: e.balance_after,
      });
    }
  }

  private addTransaction(p: Pending, result: PostResult, txnId: string): void {
    this.transactions.push({
      id: txnId,
      orgId: p.req.org_id,
      livemode: p.req.livemode,
      kind: p.req.kind,
      referenceId: p.req.reference_id,
      requestHash: p.hash,
      amount: result.amount,
      description: p.req.description ?? null,
      metadata: p.req.metadata ?? {},
      effectiveAt: p.req.effective_date === undefined ? null : new Date(p.req.effective_date).toISOString(),
      claimed: this.solo !== undefined,
      result: result as unknown as Record<string, unknown>,
    });
  }

  private createHolds(p: Pending, applied: Applied, txnId: string): PostResult["holds_created"] {
    const out: PostResult["holds_created"] = [];
    for (const [i, spec] of p.req.holds_create.entries()) {
      const on = applied.holdsCreated[i];
      if (on === undefined) throw new InvariantViolation("hold without its wallet");
      const hold = newHold(p, spec, i, on, txnId);
      this.newHolds.push(hold);
      out.push({ hold_id: hold.id, wallet_id: hold.walletId, participant_id: hold.participantId, amount: hold.amount, reference_id: hold.referenceId });
      this.holdEvents.push(holdCreatedEvent(p, hold, txnId));
    }
    return out;
  }

  private releaseHolds(p: Pending, applied: Applied, txnId: string): PostResult["holds_released"] {
    const out: PostResult["holds_released"] = [];
    for (const { hold: h, transferExecuted, reason } of applied.holdsReleased) {
      const releaseId = newId("rel");
      this.releases.push({ holdId: h.id, releaseId, transactionId: txnId, transferExecuted });
      this.holds.set(h.id, { ...h, status: "released", releaseId });
      // A hold a cover used whole ended with the transaction that took the money back, not by a client's release.
      if (reason === undefined)
        out.push({ hold_id: h.id, release_id: releaseId, wallet_id: h.walletId, amount: h.amount, transfer_executed: transferExecuted });
      this.holdEvents.push(holdReleasedEvent(p, h, releaseId, transferExecuted, reason, txnId));
    }
    for (const { hold: h, by } of applied.holdsReduced) {
      this.reductions.push({ holdId: h.id, by });
      this.holds.set(h.id, { ...h, amount: cents(h.amount - by) });
    }
    return out;
  }

  /**
   * The internal event lists the batch's transactions of one org and environment. Its headers are the first
   * request's; each item names its own request id and trace, so a consumer can follow every one.
   */
  private addPosted(p: Pending, item: Record<string, unknown>): void {
    const key = `${p.req.org_id}\u0000${p.req.livemode}`;
    let group = this.posted.get(key);
    if (group === undefined) {
      group = { orgId: p.req.org_id, livemode: p.req.livemode, headers: p.headers, items: [] };
      this.posted.set(key, group);
    }
    group.items.push({ ...item, ...traceOf(p.headers) });
  }

  /** Step 4's input. Locked rows are written when they changed; remembered rows always (the guarded write is what makes reading them exact). */
  write(remembered: boolean, shard: () => number): BatchWrite {
    const wallets: BatchWrite["wallets"][number][] = [];
    for (const w of this.rows.locked) {
      const st = this.state.get(w.id);
      if (st === undefined) continue;
      if (remembered || w.balance !== st.balance || w.held_amount !== st.held) wallets.push({ id: w.id, balance: st.balance, held: st.held, xmin: w.xmin });
    }
    const shards = [...this.shardDeltas.entries()].filter(([, d]) => d !== 0).map(([accountId, delta]) => ({ accountId, shard: shard(), delta }));
    const events: BatchEvent[] = [...this.posted.values()].map((g) => ({
      id: sortableId("evt"),
      orgId: g.orgId,
      livemode: g.livemode,
      type: "ledger.transaction.posted",
      headers: g.headers,
      data: transactionsPostedData(g.items),
    }));
    events.push(...this.holdEvents);
    return {
      transactions: this.transactions,
      entries: this.entries,
      wallets,
      shards,
      events,
      holds: this.newHolds,
      sales: this.sales,
      releases: this.releases,
      reductions: this.reductions,
      saleUpdates: [...this.saleUpdates.values()],
    };
  }
}
