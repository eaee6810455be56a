/**
 * The PostgreSQL adapters of the use cases' store ports (usecases/ports.ts), over the pool or, inside a database
 * transaction, over that transaction (tx.ts). The functions they call hold the SQL; this file only wires them.
 */
import { withTx } from "@treasury/service-kit";
import type { LedgerDeps } from "../usecases/deps.ts";
import type {
  AccountStore,
  BankLineStore,
  BillStore,
  HoldStore,
  ListingStore,
  ParticipantStore,
  ReconciliationStore,
  RecordStore,
  SaleStore,
  TransactionStore,
  WalletStore,
} from "../usecases/ports.ts";
import { accountKinds, ensureSystemAccount, findConsumerWallet, findCreatorWallet, findWalletById, insertWallet, listWallets } from "./accounts.ts";
import { findBankLine, findTemplate, listTemplates, unmatchedBankLines, unmatchedBankLinesForMatching, upsertTemplate } from "./bank-lines.ts";
import { findBill } from "./bills.ts";
import type { Q, Sql } from "./db.ts";
import { activeHoldsOfWallets, dueAutoReleaseHolds, findHold, holdsSummary, listHolds } from "./holds.ts";
import { accountTotals, entriesWithAccounts, listTransactions, transactionsByAccountingTime } from "./listing.ts";
import { findParticipant, findParticipants, listParticipants, participantExists } from "./participants.ts";
import {
  activeMatchOf,
  bankSideCandidates,
  countUnmatchedBankSideTransactions,
  endMatch,
  findMatch,
  findMatches,
  insertMatchIds,
  insertMatches,
  transactionExists,
  unmatchedBankSideTransactions,
} from "./reconciliation.ts";
import { findSale, saleParticipant } from "./sales.ts";
import { findReserves, putReserve } from "./reserves.ts";
import { pgSandboxClockStore } from "./sandbox-clocks.ts";
import { findRecordEntries, findRecordSale, findTransactionRow } from "./transaction-record.ts";
import { findTransaction, latestReversal, listWalletEntries, transactionEntries } from "./transactions.ts";
import { pgTxStore } from "./tx.ts";

export type LedgerStores = Omit<LedgerDeps, "poster" | "parser" | "now" | "risk">;

/** Every store port over the pool `sql`, and database transactions on it. */
export function pgStores(sql: Sql): LedgerStores {
  return {
    wallets: pgWalletStore(sql),
    participants: pgParticipantStore(sql),
    holds: pgHoldStore(sql),
    accounts: pgAccountStore(sql),
    sales: pgSaleStore(sql),
    transactions: pgTransactionStore(sql),
    bills: pgBillStore(sql),
    listing: pgListingStore(sql),
    records: pgRecordStore(sql),
    bankLines: pgBankLineStore(sql),
    reconciliation: pgReconciliationStore(sql),
    sandboxClocks: pgSandboxClockStore(sql),
    reserves: { find: (t, ids) => findReserves(sql, t, ids), put: (t, r) => putReserve(sql, t, r) },
    transaction: (fn) => withTx(sql, (tx) => fn(pgTxStore(tx))),
  };
}

export function pgWalletStore(q: Q): WalletStore {
  return {
    findById: (t, id) => findWalletById(q, t, id),
    findCreator: (t, participantId) => findCreatorWallet(q, t, participantId),
    findConsumer: (t, ownerId) => findConsumerWallet(q, t, ownerId),
    insert: (t, w) => insertWallet(q, t, w),
    list: (t, f, limit, offset) => listWallets(q, t, f, limit, offset),
    entries: (t, walletId, limit, offset) => listWalletEntries(q, t, walletId, limit, offset),
  };
}

export function pgParticipantStore(q: Q): ParticipantStore {
  return {
    find: (t, participantId) => findParticipant(q, t, participantId),
    list: (t, limit, offset) => listParticipants(q, t, limit, offset),
    findMany: (t, participantIds) => findParticipants(q, t, participantIds),
    exists: (t, participantId) => participantExists(q, t, participantId),
  };
}

export function pgHoldStore(q: Q): HoldStore {
  return {
    find: (t, id) => findHold(q, t, id),
    list: (t, f, limit, offset) => listHolds(q, t, f, limit, offset),
    summary: (t, now) => holdsSummary(q, t, now),
    activeOfWallets: (t, walletIds) => activeHoldsOfWallets(q, t, walletIds),
    dueForRelease: (realNow, advanced, limit) => dueAutoReleaseHolds(q, realNow, advanced, limit),
  };
}

/** System accounts are created outside any transaction (their ids are cached per pool), so this takes the pool. */
export function pgAccountStore(sql: Sql): AccountStore {
  return {
    ensureSystem: (t, type, entityId) => ensureSystemAccount(sql, t, type, entityId),
    kinds: (t, ids) => accountKinds(sql, t, ids),
  };
}

export function pgSaleStore(q: Q): SaleStore {
  return {
    find: (t, saleReference) => findSale(q, t, saleReference),
    participantOf: (t, transactionId) => saleParticipant(q, t, transactionId),
  };
}

export function pgTransactionStore(q: Q): TransactionStore {
  return {
    find: (t, id) => findTransaction(q, t, id),
    latestReversal: (t, id) => latestReversal(q, t, id),
    entries: (t, transactionId) => transactionEntries(q, t, transactionId),
  };
}

export function pgBillStore(q: Q): BillStore {
  return { find: (t, by) => findBill(q, t, by) };
}

export function pgListingStore(q: Q): ListingStore {
  return {
    transactions: (t, f, limit, offset) => listTransactions(q, t, f, limit, offset),
    entriesWithAccounts: (t, ids) => entriesWithAccounts(q, t, ids),
    accountTotals: (t, range) => accountTotals(q, t, range),
    byAccountingTime: (t, range, limit, offset) => transactionsByAccountingTime(q, t, range, limit, offset),
  };
}

export function pgRecordStore(q: Q): RecordStore {
  return {
    transaction: (t, id) => findTransactionRow(q, t, id),
    entries: (t, transactionId) => findRecordEntries(q, t, transactionId),
    sale: (t, transactionId) => findRecordSale(q, t, transactionId),
  };
}

export function pgBankLineStore(q: Q): BankLineStore {
  return {
    templates: (t) => listTemplates(q, t),
    findTemplate: (t, id) => findTemplate(q, t, id),
    saveTemplate: (t, tpl) => upsertTemplate(q, t, tpl),
    find: (t, id) => findBankLine(q, t, id),
    unmatched: (t, f, limit, offset) => unmatchedBankLines(q, t, f, limit, offset),
    unmatchedForMatching: (t, f, limit) => unmatchedBankLinesForMatching(q, t, f, limit),
  };
}

export function pgReconciliationStore(q: Q): ReconciliationStore {
  return {
    insert: (t, matches) => insertMatches(q, t, matches),
    insertIds: (t, matches) => insertMatchIds(q, t, matches),
    findMany: (t, ids) => findMatches(q, t, ids),
    find: (t, id) => findMatch(q, t, id),
    activeOf: (t, by) => activeMatchOf(q, t, by),
    end: (t, id) => endMatch(q, t, id),
    transactionExists: (t, id) => transactionExists(q, t, id),
    unmatchedTransactions: (t, range, limit, offset) => unmatchedBankSideTransactions(q, t, range, limit, offset),
    countUnmatchedTransactions: (t, range) => countUnmatchedBankSideTransactions(q, t, range),
    candidates: (t, range, currency, limit) => bankSideCandidates(q, t, range, currency, limit),
  };
}
