/** The store port of a use case's work inside a database transaction (usecases/ports.ts: TxStore), over that transaction. */
import type { TxStore } from "../usecases/ports.ts";
import { insertWallet } from "./accounts.ts";
import { insertImport, insertBankLines, settleImport } from "./bank-lines.ts";
import { insertBill, lockBill, payBillAmount } from "./bills.ts";
import type { Q } from "./db.ts";
import { findParticipant, insertParticipant } from "./participants.ts";
import { lockSaleByReference, lockSaleByTransaction, updateSaleRemainder } from "./sales.ts";
import { findTransaction, latestReversal, markReversal } from "./transactions.ts";

export function pgTxStore(tx: Q): TxStore {
  return {
    wallets: { insert: (t, w) => insertWallet(tx, t, w) },
    participants: {
      insert: (t, p) => insertParticipant(tx, t, p),
      find: (t, participantId) => findParticipant(tx, t, participantId),
    },
    sales: {
      lockByTransaction: (t, transactionId) => lockSaleByTransaction(tx, t, transactionId),
      lockByReference: (t, saleReference) => lockSaleByReference(tx, t, saleReference),
      updateRemainder: (t, saleReference, r) => updateSaleRemainder(tx, t, saleReference, r),
    },
    transactions: {
      lock: (t, id) => findTransaction(tx, t, id, { forUpdate: true }),
      latestReversal: (t, id) => latestReversal(tx, t, id),
      markReversal: (t, reversalId, originalId, reversedAmount, fully) => markReversal(tx, t, reversalId, originalId, reversedAmount, fully),
    },
    bills: {
      insert: (t, b) => insertBill(tx, t, b),
      lock: (t, id) => lockBill(tx, t, id),
      pay: (t, id, amount) => payBillAmount(tx, t, id, amount),
    },
    imports: {
      insertImport: (t, i) => insertImport(tx, t, i),
      insertLines: (t, importId, lines) => insertBankLines(tx, t, importId, lines),
      settleImport: (t, id, imported, duplicates) => settleImport(tx, t, id, imported, duplicates),
    },
  };
}
