/**
 * In-process wake-ups for the outbox relay. A transaction that wrote outbox rows is remembered here; when
 * `withTx` sees it commit, the relay of that schema in this process is woken at once. Replicas whose relay
 * is not the leader rely on the relay's short poll instead.
 *
 * Why not NOTIFY: PostgreSQL serialises the commits of every notifying transaction under one lock (held
 * through the WAL flush), which capped outbox-writing transactions at a fraction of the database's commit rate.
 */
import { EventEmitter } from "node:events";

const written = new WeakMap<object, Set<string>>();
const committed = new EventEmitter();
committed.setMaxListeners(0);

export function markOutboxWritten(tx: object, schema: string): void {
  let schemas = written.get(tx);
  if (schemas === undefined) {
    schemas = new Set();
    written.set(tx, schemas);
  }
  schemas.add(schema);
}

/** Called after a transaction committed: wakes the local relays of the schemas it wrote outbox rows to. */
export function signalCommitted(tx: object): void {
  const schemas = written.get(tx);
  if (schemas === undefined) return;
  written.delete(tx);
  for (const schema of schemas) committed.emit(schema);
}

export function onOutboxCommitted(schema: string, fn: () => void): () => void {
  committed.on(schema, fn);
  return () => committed.off(schema, fn);
}
