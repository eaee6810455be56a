/**
 * One statement for many requests. A statement that every request of a busy service sends once (an intent's
 * insert, its settle) costs PostgreSQL a commit, a wake-up and a round trip per request, and the service a
 * socket write each; under load that overhead, not the rows, is most of its cost. A Coalescer gathers the
 * items submitted during one event-loop turn and runs them as one call of `run`, which answers one result per
 * item, in order: each caller still waits for, and gets, only its own result.
 *
 * A batch that PostgreSQL refused as a statement (a PostgresError: nothing of it was written) runs again item
 * by item, so a bad item fails only its own request. Any other failure (a lost connection: the outcome is
 * unknown) fails every item of the batch with it, exactly as it would have failed each statement alone.
 *
 * The batch runs in the async context of the request whose item closed it, so its database span belongs to
 * that request's trace.
 */
import postgres from "postgres";

interface Waiting<I, O> {
  item: I;
  resolve: (o: O) => void;
  reject: (e: unknown) => void;
}

export class Coalescer<I, O> {
  private queue: Waiting<I, O>[] = [];
  private scheduled = false;

  constructor(
    private readonly run: (items: readonly I[]) => Promise<readonly O[]>,
    private readonly sizeMax = 64,
  ) {}

  submit(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      if (this.queue.length >= this.sizeMax) this.flush();
      else if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.scheduled = false;
    const batch = this.queue;
    if (batch.length === 0) return;
    this.queue = [];
    void this.runBatch(batch);
  }

  private async runBatch(batch: readonly Waiting<I, O>[]): Promise<void> {
    try {
      const out = await this.run(batch.map((w) => w.item));
      if (out.length !== batch.length) throw new Error(`a coalesced statement answered ${out.length} results for ${batch.length} items`);
      batch.forEach((w, i) => w.resolve(out[i] as O));
    } catch (e) {
      if (batch.length === 1 || !(e instanceof postgres.PostgresError)) {
        for (const w of batch) w.reject(e);
        return;
      }
      await Promise.all(batch.map((w) => this.runBatch([w])));
    }
  }
}
