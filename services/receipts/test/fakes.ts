/**
 * In-memory stand-ins for the receipts ports (usecases/ports.ts), for the use cases' unit tests: no PostgreSQL,
 * no NATS. They keep the rules the real adapters keep where the use cases rely on them: one receipt per sale, one
 * proof per transaction, proofs of one chain appended one at a time under the head, one active signing key.
 */
import { DomainError, type schemas, type Tenant } from "@treasury/contracts";
import { generateKeyRingEntry, parseKeyRing, Sealer } from "@treasury/service-kit";
import { pino } from "pino";
import { GENESIS_HASH } from "../src/domain/canonical.ts";
import { Keyring } from "../src/usecases/keyring.ts";
import type {
  AuditRow,
  ChainHead,
  ChainStore,
  CheckpointRow,
  KeyStore,
  ProofRow,
  ProofStore,
  Reads,
  ReceiptRow,
  ReceiptStore,
  ReceiptsDeps,
  SignatureRow,
  SigningKeyRow,
} from "../src/usecases/ports.ts";

const chainOf = (t: Tenant) => `${t.orgId}|${String(t.livemode)}`;
const clone = <T>(v: T): T => structuredClone(v);

/** Runs `fn` after the previous holder of `key` is done: a row lock's turn-taking, in memory. */
class Locks {
  private readonly tails = new Map<string, Promise<unknown>>();

  async hold<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const before = this.tails.get(key) ?? Promise.resolve();
    const mine = before.then(fn, fn);
    this.tails.set(
      key,
      mine.catch(() => undefined),
    );
    return mine;
  }
}

export class MemReceipts implements ReceiptStore {
  readonly rows: ReceiptRow[] = [];

  async insert(r: Parameters<ReceiptStore["insert"]>[0]): Promise<ReceiptRow | undefined> {
    if (this.rows.some((x) => x.org_id === r.org_id && x.livemode === r.livemode && x.sale_transaction_id === r.sale_transaction_id)) return undefined;
    const row: ReceiptRow = { ...clone(r), status: "issued", created_at: new Date() };
    this.rows.push(row);
    return clone(row);
  }

  async find(t: Tenant, id: string) {
    return clone(this.rows.find((r) => r.id === id && r.org_id === t.orgId && r.livemode === t.livemode));
  }

  async findBySale(t: Tenant, saleTransactionId: string) {
    return clone(this.rows.find((r) => r.sale_transaction_id === saleTransactionId && r.org_id === t.orgId && r.livemode === t.livemode));
  }

  async findForPage(id: string) {
    return clone(this.rows.find((r) => r.id === id));
  }
}

export class MemProofs implements ProofStore {
  readonly proofs: ProofRow[] = [];
  readonly heads = new Map<string, ChainHead>();
  readonly signatures: Array<SignatureRow & { chain: string; transaction_id: string }> = [];
  private readonly locks = new Locks();

  private of(t: Tenant): ProofRow[] {
    return this.proofs.filter((p) => p.org_id === t.orgId && p.livemode === t.livemode);
  }

  async find(t: Tenant, transactionId: string) {
    return clone(this.of(t).find((p) => p.transaction_id === transactionId));
  }

  async findByHash(t: Tenant, receiptHash: string) {
    return clone(
      this.of(t)
        .filter((p) => p.receipt_hash === receiptHash)
        .sort((a, b) => a.sequence - b.sequence)[0],
    );
  }

  append(t: Tenant, transactionId: string, link: (head: ChainHead) => Promise<Omit<ProofRow, "created_at">>): Promise<ProofRow> {
    const chain = chainOf(t);
    return this.locks.hold(chain, async () => {
      const head = this.heads.get(chain) ?? { last_sequence: 0, last_entry_hash: GENESIS_HASH };
      this.heads.set(chain, head);
      const raced = this.of(t).find((p) => p.transaction_id === transactionId);
      if (raced !== undefined) return clone(raced);
      const p = await link(clone(head));
      const row: ProofRow = { ...clone(p), created_at: new Date() };
      this.proofs.push(row);
      this.heads.set(chain, { last_sequence: p.sequence, last_entry_hash: p.entry_hash });
      return clone(row);
    });
  }

  async head(t: Tenant) {
    return clone(this.heads.get(chainOf(t)));
  }

  async page(t: Tenant, afterSequence: number, throughSequence: number, limit: number) {
    return clone(
      this.of(t)
        .filter((p) => p.sequence > afterSequence && p.sequence <= throughSequence)
        .sort((a, b) => a.sequence - b.sequence)
        .slice(0, limit),
    );
  }

  async listSignatures(t: Tenant, transactionId: string): Promise<SignatureRow[]> {
    return this.signatures
      .filter((s) => s.chain === chainOf(t) && s.transaction_id === transactionId)
      .map(({ chain: _c, transaction_id: _t, ...s }) => clone(s));
  }

  async insertSignature(t: Tenant, transactionId: string, sig: Omit<SignatureRow, "created_at">) {
    if ((await this.findSignature(t, transactionId, sig.key_id)) !== undefined) return undefined;
    const row: SignatureRow = { ...clone(sig), created_at: new Date() };
    this.signatures.push({ ...row, chain: chainOf(t), transaction_id: transactionId });
    return clone(row);
  }

  async findSignature(t: Tenant, transactionId: string, keyId: string) {
    return (await this.listSignatures(t, transactionId)).find((s) => s.key_id === keyId);
  }
}

export class MemChains implements ChainStore {
  readonly checkpoints = new Map<string, CheckpointRow[]>();
  readonly audits = new Map<string, AuditRow>();

  constructor(private readonly proofs: MemProofs) {}

  async newestCheckpoint(t: Tenant) {
    return clone((this.checkpoints.get(chainOf(t)) ?? []).at(-1));
  }

  async insertCheckpoint(t: Tenant, c: CheckpointRow) {
    const list = this.checkpoints.get(chainOf(t)) ?? [];
    if (!list.some((x) => x.sequence === c.sequence)) list.push(clone(c));
    this.checkpoints.set(
      chainOf(t),
      list.sort((a, b) => a.sequence - b.sequence),
    );
  }

  async findAudit(t: Tenant) {
    return clone(this.audits.get(chainOf(t)));
  }

  async recordAudit(t: Tenant, a: AuditRow) {
    this.audits.set(chainOf(t), clone(a));
  }

  async listChains(): Promise<Tenant[]> {
    return [...this.proofs.heads.keys()].sort().map((k) => {
      const [orgId = "", livemode] = k.split("|");
      return { orgId, livemode: livemode === "true" };
    });
  }

  async countBroken() {
    return [...this.audits.values()].filter((a) => a.problems.length > 0).length;
  }
}

export class MemKeys implements KeyStore {
  readonly rows: SigningKeyRow[] = [];
  private readonly locks = new Locks();
  private tick = 0;

  async findActive() {
    return clone(this.rows.find((k) => k.status === "active"));
  }

  ensureActive(make: Parameters<KeyStore["ensureActive"]>[0]): Promise<SigningKeyRow> {
    return this.locks.hold("keys", async () => (await this.findActive()) ?? this.insert(await make()));
  }

  rotate(make: Parameters<KeyStore["rotate"]>[0]) {
    return this.locks.hold("keys", async () => {
      const retiredKids: string[] = [];
      for (const k of this.rows.filter((r) => r.status === "active")) {
        k.status = "retired";
        k.retired_at = new Date();
        retiredKids.push(k.kid);
      }
      return { row: this.insert(await make()), retiredKids };
    });
  }

  async findPublic(kid: string) {
    const row = this.rows.find((k) => k.kid === kid);
    if (row === undefined) return undefined;
    const { sealed_private_key: _s, ...pub } = row;
    return clone(pub);
  }

  async listPublic() {
    return [...this.rows].sort((a, b) => b.created_at.getTime() - a.created_at.getTime()).map(({ sealed_private_key: _s, ...pub }) => clone(pub));
  }

  private insert(k: Awaited<ReturnType<Parameters<KeyStore["rotate"]>[0]>>): SigningKeyRow {
    // Distinct creation times, so "newest first" is well defined however fast the test runs.
    const row: SigningKeyRow = {
      kid: k.kid,
      alg: k.alg,
      public_jwk: clone(k.publicJwk),
      sealed_private_key: k.sealed,
      status: "active",
      created_at: new Date(Date.UTC(2026, 0, 1) + ++this.tick * 1000),
      retired_at: null,
    };
    this.rows.push(row);
    return clone(row);
  }
}

/** The ledger's transactions and payments' checkouts a test declares; every read is counted. */
export class FakeReads implements Reads {
  readonly records = new Map<string, schemas.TransactionRecord>();
  readonly checkouts = new Map<string, schemas.CheckoutSale>();
  readonly calls: string[] = [];

  async transactionRecord(t: Tenant, transactionId: string) {
    this.calls.push(`transactionRecord ${transactionId}`);
    const r = this.records.get(transactionId);
    if (r === undefined || r.org_id !== t.orgId || r.livemode !== t.livemode)
      throw new DomainError("transaction_not_found", `Transaction ${transactionId} not found`);
    return clone(r);
  }

  async checkoutSale(t: Tenant, checkoutId: string) {
    this.calls.push(`checkoutSale ${checkoutId}`);
    const c = this.checkouts.get(`${chainOf(t)}|${checkoutId}`);
    if (c === undefined) throw new DomainError("checkout_session_not_found", `Checkout session ${checkoutId} not found`);
    return clone(c);
  }

  addCheckout(t: Tenant, c: schemas.CheckoutSale): void {
    this.checkouts.set(`${chainOf(t)}|${c.id}`, c);
  }
}

let seq = 0;

/** A transaction of `t` as the ledger records it: a sale of `gross` unless `sale` is null. */
export function transactionRecord(t: Tenant, opts: { id?: string; gross?: number; sale?: null } = {}): schemas.TransactionRecord {
  const id = opts.id ?? `txn_unit${++seq}`;
  const gross = opts.gross ?? 4_999;
  return {
    id,
    org_id: t.orgId,
    livemode: t.livemode,
    transaction_type: opts.sale === null ? "adjustment" : "sale",
    reference_id: `ref_${id}`,
    amount: gross,
    currency: "USD",
    description: "Guitar lessons",
    metadata: {},
    reversal_of: null,
    effective_at: null,
    created_at: "2026-01-02T03:04:05.000Z",
    entries: [
      { id: `${id}_d`, account_id: "acc_cash", account_type: "platform_cash", entity_id: null, entry_type: "debit", amount: gross },
      { id: `${id}_c`, account_id: "acc_wallet", account_type: "creator_wallet", entity_id: "creator_1", entry_type: "credit", amount: gross },
    ],
    sale:
      opts.sale === null ? null : { sale_reference: `ref_${id}`, participant_id: "creator_1", participant_display_name: "Ana's Studio", gross, sales_tax: 0 },
  };
}

export function newSealer(kid = "r1"): Sealer {
  return new Sealer(parseKeyRing(generateKeyRingEntry(kid)));
}

export const silentLog = pino({ level: "silent" });

export interface Fakes {
  deps: ReceiptsDeps;
  receipts: MemReceipts;
  proofs: MemProofs;
  chains: MemChains;
  keys: MemKeys;
  reads: FakeReads;
  sealer: Sealer;
}

/** The use cases' deps over in-memory ports, with signing configured (`sealer: undefined` leaves it off). */
export function fakes(opts: { sealer?: Sealer | undefined; checkpointEvery?: number } = {}): Fakes {
  const receipts = new MemReceipts();
  const proofs = new MemProofs();
  const chains = new MemChains(proofs);
  const keys = new MemKeys();
  const reads = new FakeReads();
  const sealer = "sealer" in opts ? opts.sealer : newSealer();
  const deps: ReceiptsDeps = {
    receipts,
    proofs,
    chains,
    reads,
    keyring: new Keyring(keys, sealer, silentLog),
    checkpointEvery: opts.checkpointEvery ?? 1_000,
    now: () => new Date(),
  };
  return { deps, receipts, proofs, chains, keys, reads, sealer: sealer ?? newSealer() };
}
