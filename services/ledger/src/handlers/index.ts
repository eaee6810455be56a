/** RPC handlers of the ledger's public operations: decode with the shared contracts → use case → named-key body. */
import { schemas, tenantOf } from "@treasury/contracts";
import type { RpcHandler, Service } from "@treasury/service-kit";
import { z } from "zod";
import type { LedgerDeps } from "../usecases/deps.ts";
import { createHold, getHoldsSummary, listHolds, releaseHold } from "../usecases/holds.ts";
import { depositToWallet, transferBetweenWallets, withdrawFromWallet } from "../usecases/movements.ts";
import { createParticipant, getParticipant, listParticipants } from "../usecases/participants.ts";
import { payBill, recordAdjustment, recordBill, recordExpense, recordIncome, recordOpeningBalance, recordTransfer } from "../usecases/records.ts";
import { generateReport } from "../usecases/reports.ts";
import { reverseTransaction } from "../usecases/reverse.ts";
import { getReserve, putReserve } from "../usecases/reserves.ts";
import { recordSale } from "../usecases/sale.ts";
import { advanceSandboxClock, getSandboxClock } from "../usecases/sandbox-clock.ts";
import { getTransactions } from "../usecases/transactions.ts";
import { createWallet, getWallet, listWalletEntries, listWallets, WALLET_PAGE_DEFAULT } from "../usecases/wallets.ts";
import { decode, param } from "./decode.ts";

type Handlers = Record<string, RpcHandler>;

/** Holds lists accept an offset too (the shared query schema names only limit). */
const HoldsOffset = z.object({ offset: schemas.pagingInt(0, 1_000_000_000).optional() });

export function registerHandlers(svc: Pick<Service, "handle">, deps: LedgerDeps): void {
  const ops: Handlers = { ...participantOps(deps), ...walletOps(deps), ...holdOps(deps), ...recordOps(deps), ...transactionOps(deps), ...clockOps(deps) };
  for (const [operation, handler] of Object.entries(ops)) svc.handle(operation, handler);
}

function participantOps(deps: LedgerDeps): Handlers {
  return {
    createParticipant: async (req, ctx) => {
      const res = await createParticipant(deps, tenantOf(ctx.auth), decode(schemas.CreateParticipantBody, req.body, "body"));
      return { status: res.created ? 201 : 200, body: { participant: res.participant } };
    },
    listParticipants: async (req, ctx) => {
      const q = decode(schemas.ListParticipantsQuery, req.query, "query");
      return { body: await listParticipants(deps, tenantOf(ctx.auth), { limit: q.limit ?? WALLET_PAGE_DEFAULT, offset: q.offset ?? 0 }) };
    },
    getParticipant: async (req, ctx) => ({ body: { participant: await getParticipant(deps, tenantOf(ctx.auth), param(req.params, "participant_id")) } }),
    putReserve: async (req, ctx) => ({
      body: await putReserve(deps, tenantOf(ctx.auth), param(req.params, "participant_id"), decode(schemas.ReserveBody, req.body, "body")),
    }),
    getReserve: async (req, ctx) => ({ body: await getReserve(deps, tenantOf(ctx.auth), param(req.params, "participant_id")) }),
  };
}

function walletOps(deps: LedgerDeps): Handlers {
  return {
    listWallets: async (req, ctx) => ({ body: await listWallets(deps, tenantOf(ctx.auth), decode(schemas.ListWalletsQuery, req.query, "query")) }),
    createWallet: async (req, ctx) => {
      const res = await createWallet(deps, tenantOf(ctx.auth), decode(schemas.CreateWalletBody, req.body, "body"));
      return { status: res.created ? 201 : 200, body: res };
    },
    getWallet: async (req, ctx) => ({ body: { wallet: await getWallet(deps, tenantOf(ctx.auth), param(req.params, "wallet_id")) } }),
    listWalletEntries: async (req, ctx) => ({
      body: await listWalletEntries(deps, tenantOf(ctx.auth), param(req.params, "wallet_id"), decode(schemas.ListEntriesQuery, req.query, "query")),
    }),
    depositToWallet: async (req, ctx) => ({
      status: 201,
      body: await depositToWallet(deps, tenantOf(ctx.auth), param(req.params, "wallet_id"), decode(schemas.WalletMovementBody, req.body, "body")),
    }),
    withdrawFromWallet: async (req, ctx) => ({
      status: 201,
      body: await withdrawFromWallet(deps, tenantOf(ctx.auth), param(req.params, "wallet_id"), decode(schemas.WalletMovementBody, req.body, "body")),
    }),
    transferBetweenWallets: async (req, ctx) => ({
      status: 201,
      body: await transferBetweenWallets(deps, tenantOf(ctx.auth), decode(schemas.TransferBody, req.body, "body")),
    }),
  };
}

function holdOps(deps: LedgerDeps): Handlers {
  return {
    createHold: async (req, ctx) => ({ status: 201, body: await createHold(deps, tenantOf(ctx.auth), decode(schemas.CreateHoldBody, req.body, "body")) }),
    listHolds: async (req, ctx) => {
      const q = decode(schemas.ListHoldsQuery, req.query, "query");
      const o = decode(HoldsOffset, req.query, "query");
      return { body: await listHolds(deps, tenantOf(ctx.auth), { ...q, offset: o.offset }) };
    },
    getHoldsSummary: async (_req, ctx) => ({ body: await getHoldsSummary(deps, tenantOf(ctx.auth)) }),
    releaseHold: async (req, ctx) => ({
      body: await releaseHold(deps, tenantOf(ctx.auth), param(req.params, "hold_id"), decode(schemas.ReleaseHoldBody, req.body, "body")),
    }),
  };
}

/** Accounting records and sales: each answers 201 with the record. */
function recordOps(deps: LedgerDeps): Handlers {
  return {
    recordSale: async (req, ctx) => ({ status: 201, body: await recordSale(deps, tenantOf(ctx.auth), decode(schemas.RecordSaleBody, req.body, "body")) }),
    recordIncome: async (req, ctx) => ({ status: 201, body: await recordIncome(deps, tenantOf(ctx.auth), decode(schemas.RecordIncomeBody, req.body, "body")) }),
    recordExpense: async (req, ctx) => ({
      status: 201,
      body: await recordExpense(deps, tenantOf(ctx.auth), decode(schemas.RecordExpenseBody, req.body, "body")),
    }),
    recordBill: async (req, ctx) => ({ status: 201, body: await recordBill(deps, tenantOf(ctx.auth), decode(schemas.RecordBillBody, req.body, "body")) }),
    payBill: async (req, ctx) => ({ status: 201, body: await payBill(deps, tenantOf(ctx.auth), decode(schemas.PayBillBody, req.body, "body")) }),
    recordAdjustment: async (req, ctx) => ({
      status: 201,
      body: await recordAdjustment(deps, tenantOf(ctx.auth), decode(schemas.RecordAdjustmentBody, req.body, "body")),
    }),
    recordOpeningBalance: async (req, ctx) => ({
      status: 201,
      body: await recordOpeningBalance(deps, tenantOf(ctx.auth), decode(schemas.RecordOpeningBalanceBody, req.body, "body")),
    }),
    recordTransfer: async (req, ctx) => ({
      status: 201,
      body: await recordTransfer(deps, tenantOf(ctx.auth), decode(schemas.RecordTransferBody, req.body, "body")),
    }),
  };
}

function transactionOps(deps: LedgerDeps): Handlers {
  return {
    reverseTransaction: async (req, ctx) => ({
      status: 201,
      body: await reverseTransaction(deps, tenantOf(ctx.auth), decode(schemas.ReverseTransactionBody, req.body, "body")),
    }),
    getTransactions: async (req, ctx) => ({ body: await getTransactions(deps, tenantOf(ctx.auth), decode(schemas.GetTransactionsQuery, req.query, "query")) }),
    generateReport: async (req, ctx) => ({ body: await generateReport(deps, tenantOf(ctx.auth), decode(schemas.GenerateReportBody, req.body, "body")) }),
  };
}

/** The sandbox test clock (sandbox keys only). */
function clockOps(deps: LedgerDeps): Handlers {
  return {
    getSandboxClock: async (_req, ctx) => ({ body: await getSandboxClock(deps, tenantOf(ctx.auth)) }),
    advanceSandboxClock: async (req, ctx) => ({
      body: await advanceSandboxClock(deps, tenantOf(ctx.auth), decode(schemas.SandboxClockAdvanceBody, req.body, "body")),
    }),
  };
}
