/**
 * Values collected by key until the end of the event-loop turn (setImmediate), then handed on key by key, in
 * the order the keys first came. The RPC client queues a turn's requests in one (by subject) and the server
 * its batched replies (by reply subject): one NATS message per key and turn instead of one per value.
 * take() hands a key's values on earlier; flush() at once.
 */
export class TurnQueue<V> {
  private byKey = new Map<string, V[]>();
  private scheduled = false;

  constructor(private readonly onFlush: (key: string, values: V[]) => void) {}

  /** Adds a value; returns how many the key now holds. */
  push(key: string, value: V): number {
    let values = this.byKey.get(key);
    if (values === undefined) {
      values = [];
      this.byKey.set(key, values);
    }
    values.push(value);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
    return values.length;
  }

  take(key: string): V[] {
    const values = this.byKey.get(key) ?? [];
    this.byKey.delete(key);
    return values;
  }

  flush(): void {
    this.scheduled = false;
    const byKey = this.byKey;
    if (byKey.size === 0) return;
    this.byKey = new Map();
    for (const [key, values] of byKey) this.onFlush(key, values);
  }
}
