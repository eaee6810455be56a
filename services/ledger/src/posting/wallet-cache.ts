/** Wallet rows remembered between batches (see WalletCache). */
import { cents } from "@treasury/contracts";
import type { LockedWallet } from "../store/batch-reads.ts";

/**
 * The last committed state of wallets this process wrote or locked, with the row version (xmin) it had. A batch
 * whose wallets are all here does not lock them: it computes from these rows and its write applies only to rows
 * still at these versions (the UPDATE takes the row locks and re-checks the version after any concurrent
 * writer commits). If any row moved (another path or replica wrote it), the write fails, the rows are
 * forgotten and the batch runs again with its wallets locked and read. Checks stay exact: every wallet a batch
 * reads is written (guarded) or locked in the same transaction.
 */
export class WalletCache {
  private readonly rows = new Map<string, LockedWallet>();
  constructor(private readonly sizeMax: number) {}

  /**
   * The remembered rows of all these wallets, or undefined when one is missing or is a creator wallet (a
   * creator's receivable is read under its wallet's lock, so those batches lock).
   */
  all(ids: readonly string[]): LockedWallet[] | undefined {
    const out: LockedWallet[] = [];
    for (const id of ids) {
      const w = this.rows.get(id);
      if (w === undefined || (w.account_type === "creator_earnings" && w.participant_id !== null)) return undefined;
      out.push(w);
    }
    return out;
  }

  forget(rows: readonly LockedWallet[]): void {
    for (const w of rows) this.rows.delete(w.id);
  }

  /** After COMMIT: each row as the batch left it (written rows at the new version). */
  remember(rows: readonly LockedWallet[], written: ReadonlyMap<string, { balance: number; held: number }>, xmin: string | null): void {
    if (this.rows.size + rows.length > this.sizeMax) this.rows.clear();
    for (const w of rows) {
      const st = written.get(w.id);
      if (st === undefined) this.rows.set(w.id, w);
      else if (xmin === null) this.rows.delete(w.id);
      else {
        // Updated in place: the object is this batch's own (read for it, or remembered and used by no other
        // batch in flight, since remembered rows are used only for wallets named by id, which batches in
        // flight never share).
        w.balance = cents(st.balance);
        w.held_amount = cents(st.held);
        w.xmin = xmin;
        this.rows.set(w.id, w);
      }
    }
  }
}
