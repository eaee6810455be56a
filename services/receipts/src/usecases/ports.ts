/**
 * Every port the receipts use cases need, and the records they speak: the service's own tables (store/ adapts
 * them to PostgreSQL), what it reads from the ledger and payments (adapters/reads.ts), its signing keys, and the
 * clock. Use cases import these, never an adapter.
 */
import type { schemas, Tenant } from "@treasury/contracts";
import type { StoredLink } from "../domain/chain.ts";
import type { PrivateSigningKey, PublicJwk } from "../signing/jws.ts";

export interface ReceiptRow {
  id: string;
  org_id: string;
  livemode: boolean;
  sale_transaction_id: string;
  checkout_session_id: string | null;
  order_id: string | null;
  external_order_id: string | null;
  status: "issued";
  total_amount: number;
  sales_tax: number;
  currency: string;
  metadata: Record<string, unknown>;
  hosted_url: string;
  merchant_name: string | null;
  product_name: string | null;
  description: string | null;
  sold_at: Date;
  created_at: Date;
}

export type NewReceipt = Omit<ReceiptRow, "status" | "created_at">;

export interface ProofRow extends StoredLink {
  org_id: string;
  livemode: boolean;
  transaction_id: string;
  signature_alg: string;
  signature_kid: string;
  signature_jws: string;
  created_at: Date;
}

export type NewProof = Omit<ProofRow, "created_at">;

export interface SignatureRow {
  key_id: string;
  signer_type: "platform";
  signer_id: string | null;
  alg: "ES256" | "EdDSA";
  public_key_jwk: Record<string, unknown>;
  signature: string;
  signed_payload: string;
  created_at: Date;
}

export interface ChainHead {
  last_sequence: number;
  last_entry_hash: string;
}

export interface CheckpointRow {
  sequence: number;
  entry_hash: string;
  signature_kid: string;
  signature_jws: string;
}

export interface AuditRow {
  audited_at: Date;
  through_sequence: number;
  problems: string[];
}

export interface SigningKeyRow {
  kid: string;
  alg: string;
  public_jwk: Record<string, unknown>;
  sealed_private_key: string;
  status: "active" | "retired";
  created_at: Date;
  retired_at: Date | null;
}

export type PublicKeyRow = Omit<SigningKeyRow, "sealed_private_key">;

/** A new signing key as it is stored: its private half already sealed. */
export interface NewSigningKeyRow {
  kid: string;
  alg: string;
  publicJwk: Record<string, unknown>;
  sealed: string;
}

/** Receipts, one per sale. */
export interface ReceiptStore {
  /** Inserts a receipt; undefined when the sale already has one (the caller answers that one). */
  insert(r: NewReceipt): Promise<ReceiptRow | undefined>;
  find(tenant: Tenant, id: string): Promise<ReceiptRow | undefined>;
  findBySale(tenant: Tenant, saleTransactionId: string): Promise<ReceiptRow | undefined>;
  /** Hosted pages: the unguessable id alone authorises; the row names its org and environment. */
  findForPage(id: string): Promise<ReceiptRow | undefined>;
}

/** Proofs, the head of each chain, and the counterparty signatures of proofs. */
export interface ProofStore {
  find(tenant: Tenant, transactionId: string): Promise<ProofRow | undefined>;
  findByHash(tenant: Tenant, receiptHash: string): Promise<ProofRow | undefined>;
  /**
   * Appends the proof of `transactionId` to the tenant's chain, in one transaction that holds the chain head's
   * lock (creating the head at the genesis hash on the first proof): the proof a concurrent request made
   * meanwhile when there is one, otherwise the one `link` builds on the locked head, inserted with the head's
   * advance. Proofs of one chain take turns: each gets the next sequence, none is skipped or forked.
   */
  append(tenant: Tenant, transactionId: string, link: (head: ChainHead) => Promise<NewProof>): Promise<ProofRow>;
  head(tenant: Tenant): Promise<ChainHead | undefined>;
  /** One page of a chain in sequence order, after `afterSequence` and up to `throughSequence`. */
  page(tenant: Tenant, afterSequence: number, throughSequence: number, limit: number): Promise<ProofRow[]>;
  listSignatures(tenant: Tenant, transactionId: string): Promise<SignatureRow[]>;
  /** Inserts a signature; undefined when the proof already has one with this key_id. */
  insertSignature(tenant: Tenant, transactionId: string, sig: Omit<SignatureRow, "created_at">): Promise<SignatureRow | undefined>;
  findSignature(tenant: Tenant, transactionId: string, keyId: string): Promise<SignatureRow | undefined>;
}

/** Signed checkpoints of the chains, and what the last full audit of each found. */
export interface ChainStore {
  newestCheckpoint(tenant: Tenant): Promise<CheckpointRow | undefined>;
  /** Records a checkpoint; one a concurrent verification already recorded at that sequence stays. */
  insertCheckpoint(tenant: Tenant, c: CheckpointRow): Promise<void>;
  findAudit(tenant: Tenant): Promise<AuditRow | undefined>;
  recordAudit(tenant: Tenant, a: AuditRow): Promise<void>;
  /** Every chain (org and environment) that has a proof. */
  listChains(): Promise<Tenant[]>;
  /** Chains whose stored audit found problems. */
  countBroken(): Promise<number>;
}

/** The service's signing keys (the platform's, not an org's). */
export interface KeyStore {
  findActive(): Promise<SigningKeyRow | undefined>;
  /**
   * Under the keys' lock (the one rotation takes, so two never race to make the active key): the active key, or
   * the one `make` builds, stored as active when there is none.
   */
  ensureActive(make: () => Promise<NewSigningKeyRow>): Promise<SigningKeyRow>;
  /** Under the keys' lock: retires the active key and stores the one `make` builds as active. */
  rotate(make: () => Promise<NewSigningKeyRow>): Promise<{ row: SigningKeyRow; retiredKids: string[] }>;
  findPublic(kid: string): Promise<PublicKeyRow | undefined>;
  /** Every key, newest first (retired keys stay published so their proofs still verify). */
  listPublic(): Promise<PublicKeyRow[]>;
}

/** What receipts read from other services. Their domain errors come back as the same DomainError. */
export interface Reads {
  /** The ledger's record of a transaction. Errors: transaction_not_found. */
  transactionRecord(tenant: Tenant, transactionId: string): Promise<schemas.TransactionRecord>;
  /** The sale behind a checkout session (payments). Errors: checkout_session_not_found. */
  checkoutSale(tenant: Tenant, checkoutId: string): Promise<schemas.CheckoutSale>;
}

/** The signing keys as the use cases use them (usecases/keyring.ts). */
export interface SigningKeys {
  /** Errors: service_unavailable (signing not configured, or the active key cannot be opened). */
  signingKey(): Promise<{ kid: string; key: PrivateSigningKey }>;
  /** The public key of `kid`, or undefined for a kid this service never had. */
  publicKey(kid: string): Promise<PublicJwk | undefined>;
  allPublicKeys(): Promise<Array<{ kid: string; alg: string; jwk: PublicJwk }>>;
}

/** What the receipts use cases depend on; service.ts wires them. */
export interface ReceiptsDeps {
  receipts: ReceiptStore;
  proofs: ProofStore;
  chains: ChainStore;
  reads: Reads;
  keyring: SigningKeys;
  /** Links a verification walks past the newest chain checkpoint before it records a new one (usecases/walk-chain.ts). */
  checkpointEvery: number;
  now: () => Date;
}
