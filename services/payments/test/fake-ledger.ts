/**
 * An in-memory ledger for unit tests of the use cases: idempotent on kind + reference like the real one, and each
 * post can be told to refuse, to go unanswered, or to move the money and lose the answer.
 */
import { DomainError, type PostRequestInput, type Tenant } from "@treasury/contracts";
import { LedgerOutcomeUnknown, type LedgerPosted } from "@treasury/service-kit";
import type { LedgerClient, LedgerParticipant, LedgerWallet } from "../src/usecases/ports.ts";

/** What the next post does: answer (the default), refuse with a ledger error, or move the money and go unanswered, or not answer at all. */
export type PostBehaviour = "ok" | "unanswered" | "lost-answer" | DomainError;

export class FakeLedger implements LedgerClient {
  /** Every post asked, in order (replays included). */
  readonly asked: PostRequestInput[] = [];
  /** The posts that moved money, by kind + reference. */
  readonly posted = new Map<string, LedgerPosted>();
  readonly participants = new Map<string, LedgerParticipant>();
  readonly wallets = new Map<string, LedgerWallet>();
  private readonly behaviours: PostBehaviour[] = [];
  private seq = 0;

  /** The next posts' behaviours, in order; after them every post answers. */
  next(...behaviours: PostBehaviour[]): void {
    this.behaviours.push(...behaviours);
  }

  addParticipant(id: string, opts: { split?: number; available?: number; name?: string } = {}): LedgerParticipant {
    const wallet = this.addWallet({ owner_id: id, wallet_type: "creator_earnings", participant_id: id, available_balance: opts.available ?? 0 });
    const p = { id, display_name: opts.name ?? null, default_split_percent: opts.split ?? null, wallet_id: wallet.id };
    this.participants.set(id, p);
    return p;
  }

  addWallet(w: Partial<LedgerWallet> & { owner_id: string }): LedgerWallet {
    const available = w.available_balance ?? 0;
    const wallet: LedgerWallet = {
      id: `wal_${++this.seq}`,
      wallet_type: "consumer_credit",
      owner_type: null,
      participant_id: null,
      status: "active",
      balance: available,
      held_amount: 0,
      topup_supported: true,
      ...w,
      available_balance: available,
    };
    this.wallets.set(wallet.id, wallet);
    return wallet;
  }

  async post(req: PostRequestInput): Promise<LedgerPosted> {
    this.asked.push(req);
    const key = `${req.kind}:${req.reference_id}`;
    const earlier = this.posted.get(key);
    const behaviour = this.behaviours.shift() ?? "ok";
    if (behaviour instanceof DomainError) throw behaviour;
    if (behaviour === "unanswered") throw new LedgerOutcomeUnknown("service_timeout");
    if (earlier !== undefined) return { ...earlier, duplicate: true };
    const result: LedgerPosted = {
      transaction_id: `txn_${++this.seq}`,
      kind: req.kind,
      reference_id: req.reference_id,
      amount: req.amount ?? 0,
      created_at: new Date().toISOString(),
      wallets: {},
      holds_created: (req.holds_create ?? []).map((h, i) => ({
        hold_id: `hold_${this.seq}_${i}`,
        wallet_id: "",
        participant_id: null,
        amount: h.amount,
        reference_id: h.reference_id ?? "",
      })),
      holds_released: [],
      extra: {},
      duplicate: false,
    };
    this.posted.set(key, result);
    if (behaviour === "lost-answer") throw new LedgerOutcomeUnknown("service_timeout");
    return result;
  }

  /** The posts of a kind that moved money. */
  movements(kind: string): LedgerPosted[] {
    return [...this.posted.values()].filter((p) => p.kind === kind);
  }

  async getParticipant(_t: Tenant, id: string): Promise<LedgerParticipant> {
    const p = this.participants.get(id);
    if (p === undefined) throw new DomainError("participant_not_found", `Participant ${id} not found`);
    return p;
  }
  participantInfo = (t: Tenant, id: string) => this.getParticipant(t, id);
  findWallet = async (_t: Tenant, owner: string, type: LedgerWallet["wallet_type"]) =>
    [...this.wallets.values()].find((w) => w.owner_id === owner && w.wallet_type === type);
  async getWallet(_t: Tenant, id: string): Promise<LedgerWallet> {
    const w = this.wallets.get(id);
    if (w === undefined) throw new DomainError("wallet_not_found", `Wallet ${id} not found`);
    return w;
  }
  upsertConsumerWallet = (_t: Tenant, owner: string) => Promise.resolve(this.addWallet({ owner_id: owner }));
  listEntries = async () => [];
  topUp = () => Promise.reject(new Error("ledger.topUp is not faked"));
}
