/**
 * What the use cases are given: ports only (ports.ts). The service wires the PostgreSQL adapters and the posting
 * engine (src/deps.ts); unit tests pass in-memory fakes. Each use case names the part it needs
 * (`Pick<LedgerDeps, …>`), so a test gives only those.
 */
import type { RiskGate } from "@treasury/service-kit";
import type {
  AccountStore,
  BankLineStore,
  BillStore,
  Clock,
  HoldStore,
  ListingStore,
  ParticipantStore,
  PostPort,
  ReconciliationStore,
  RecordStore,
  ReserveStore,
  SaleStore,
  SandboxClockStore,
  StatementParser,
  TransactionStore,
  TxStore,
  WalletStore,
} from "./ports.ts";

export interface LedgerDeps {
  wallets: WalletStore;
  participants: ParticipantStore;
  holds: HoldStore;
  accounts: AccountStore;
  sales: SaleStore;
  transactions: TransactionStore;
  bills: BillStore;
  listing: ListingStore;
  records: RecordStore;
  bankLines: BankLineStore;
  reconciliation: ReconciliationStore;
  sandboxClocks: SandboxClockStore;
  reserves: ReserveStore;
  /** Runs `fn` in one database transaction (retried on serialization failures and deadlocks). */
  transaction<T>(fn: (tx: TxStore) => Promise<T>): Promise<T>;
  /** The posting engine: the one way money moves. */
  poster: PostPort;
  /** Asked before a transfer or a withdrawal posts (refuses a denial, and an outage when the org fails closed). */
  risk: RiskGate;
  parser: StatementParser;
  now: Clock;
}
