/** The PostgreSQL implementations of the record ports (usecases/ports.ts), over one pool. */
import type { PaymentsStores } from "../usecases/deps.ts";
import { pgCheckoutStore } from "./checkouts.ts";
import type { Sql } from "./db.ts";
import { pgDisputeStore } from "./disputes.ts";
import { pgProcessorCheckStore } from "./processor-checks.ts";
import { pgProcessorEventStore } from "./processor-events.ts";
import { pgProcessorRefundStore } from "./processor-refunds.ts";
import { pgSpendStore } from "./spends.ts";
import { pgTopupStore } from "./wallet-topups.ts";
import { pgWalletSessionStore } from "./wallet-sessions.ts";

export function pgStores(sql: Sql): PaymentsStores {
  return {
    checkouts: pgCheckoutStore(sql),
    disputes: pgDisputeStore(sql),
    topups: pgTopupStore(sql),
    walletSessions: pgWalletSessionStore(sql),
    spends: pgSpendStore(sql),
    processorEvents: pgProcessorEventStore(sql),
    processorRefunds: pgProcessorRefundStore(sql),
    processorChecks: pgProcessorCheckStore(sql),
  };
}
