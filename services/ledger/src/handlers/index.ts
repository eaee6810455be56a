/** RPC handlers of the ledger: decode with the shared contracts → use case → named-key body. */
import { DomainError, schemas } from "@treasury/contracts";
import type { RawRpcHandler, RpcHandler, Service } from "@treasury/service-kit";
import { domainErrorReply } from "@treasury/service-kit";
import { z } from "zod";
import { parsePostRequest } from "../usecases/post-request.ts";
import type { Poster } from "../usecases/poster.ts";
import { postRefund } from "../usecases/refund.ts";
import type { Sql } from "../store/db.ts";
import { createParticipant, getParticipant, listParticipants } from "../usecases/participants.ts";
import { createWallet, getWallet, listWalletEntries, listWallets, WALLET_PAGE_DEFAULT } from "../usecases/wallets.ts";
import { depositToWallet, transferBetweenWallets, withdrawFromWallet } from "../usecases/movements.ts";
import { createHold, getHoldsSummary, listHolds, releaseHold } from "../usecases/holds.ts";
import { generateReport } from "../usecases/reports.ts";
import { payBill, recordAdjustment, recordBill, recordExpense, recordIncome, recordOpeningBalance, recordTransfer } from "../usecases/records.ts";
import { reverseTransaction } from "../usecases/reverse.ts";
import { recordSale } from "../usecases/sale.ts";
import { getTransactions } from "../usecases/transactions.ts";
import { decode, param, scopeOf } from "./decode.ts";

/** Holds lists accept an offset too (the shared query schema names only limit). */
const HoldsOffset = z.object({ offset: schemas.pagingInt(0, 1_000_000_000).optional() });

export function registerHandlers(svc: Pick<Service, "sql" | "handle" | "rpc">, poster: Poster): void {
  const sql = svc.sql;
  const ops: Record<string, RpcHandler> = {
    createParticipant: async (req, ctx) => {
      const body = decode(schemas.CreateParticipantBody, req.body, "body");
      const res = await createParticipant(sql, scopeOf(ctx.auth), body);
      return { status: res.created ? 201 : 200, body: { participant: res.participant } };
    },
    listParticipants: async (req, ctx) => {
      const q = decode(schemas.ListParticipantsQuery, req.query, "query");
      return { body: await listParticipants(sql, scopeOf(ctx.auth), { limit: q.limit ?? WALLET_PAGE_DEFAULT, offset: q.offset ?? 0 }) };
    },
    getParticipant: async (req, ctx) => ({
      body: { participant: await getParticipant(sql, scopeOf(ctx.auth), param(req.params, "participant_id")) },
    }),
    listWallets: async (req, ctx) => ({ body: await listWallets(sql, scopeOf(ctx.auth), decode(schemas.ListWalletsQuery, req.query, "query")) }),
    createWallet: async (req, ctx) => {
      const res = await createWallet(sql, scopeOf(ctx.auth), decode(schemas.CreateWalletBody, req.body, "body"));
      return { status: res.created ? 201 : 200, body: res };
    },
    getWallet: async (req, ctx) => ({ body: { wallet: await getWallet(sql, scopeOf(ctx.auth), param(req.params, "wallet_id")) } }),
    listWalletEntries: async (req, ctx) => ({
      body: await listWalletEntries(sql, scopeOf(ctx.auth), param(req.params, "wallet_id"), decode(schemas.ListEntriesQuery, req.query, "query")),
    }),
    depositToWallet: async (req, ctx) => ({
      status: 201,
      body: await depositToWallet(sql, scopeOf(ctx.auth), param(req.params, "wallet_id"), decode(schemas.WalletMovementBody, req.body, "body"), poster),
    }),
    withdrawFromWallet: async (req, ctx) => ({
      status: 201,
      body: await withdrawFromWallet(sql, scopeOf(ctx.auth), param(req.params, "wallet_id"), decode(schemas.WalletMovementBody, req.body, "body"), poster),
    }),
    transferBetweenWallets: async (req, ctx) => ({
      status: 201,
      body: await transferBetweenWallets(sql, scopeOf(ctx.auth), decode(schemas.TransferBody, req.body, "body"), poster),
    }),
    createHold: async (req, ctx) => ({
      status: 201,
      body: await createHold(sql, scopeOf(ctx.auth), decode(schemas.CreateHoldBody, req.body, "body"), poster),
    }),
    listHolds: async (req, ctx) => {
      const q = decode(schemas.ListHoldsQuery, req.query, "query");
      const o = decode(HoldsOffset, req.query, "query");
      return { body: await listHolds(sql, scopeOf(ctx.auth), { ...q, offset: o.offset }) };
    },
    getHoldsSummary: async (_req, ctx) => ({ body: await getHoldsSummary(sql, scopeOf(ctx.auth)) }),
    releaseHold: async (req, ctx) => ({
      body: await releaseHold(sql, scopeOf(ctx.auth), param(req.params, "hold_id"), decode(schemas.ReleaseHoldBody, req.body, "body"), poster),
    }),
    recordSale: async (req, ctx) => ({ status: 201, body: await recordSale(sql, scopeOf(ctx.auth), decode(schemas.RecordSaleBody, req.body, "body"), poster) }),
    recordIncome: async (req, ctx) => ({
      status: 201,
      body: await recordIncome(sql, scopeOf(ctx.auth), decode(schemas.RecordIncomeBody, req.body, "body"), poster),
    }),
    recordExpense: async (req, ctx) => ({
      status: 201,
      body: await recordExpense(sql, scopeOf(ctx.auth), decode(schemas.RecordExpenseBody, req.body, "body"), poster),
    }),
    recordBill: async (req, ctx) => ({ status: 201, body: await recordBill(sql, scopeOf(ctx.auth), decode(schemas.RecordBillBody, req.body, "body"), poster) }),
    payBill: async (req, ctx) => ({ status: 201, body: await payBill(sql, scopeOf(ctx.auth), decode(schemas.PayBillBody, req.body, "body"), poster) }),
    recordAdjustment: async (req, ctx) => ({
      status: 201,
      body: await recordAdjustment(sql, scopeOf(ctx.auth), decode(schemas.RecordAdjustmentBody, req.body, "body"), poster),
    }),
    recordOpeningBalance: async (req, ctx) => ({
      status: 201,
      body: await recordOpeningBalance(sql, scopeOf(ctx.auth), decode(schemas.RecordOpeningBalanceBody, req.body, "body"), poster),
    }),
    recordTransfer: async (req, ctx) => ({
      status: 201,
      body: await recordTransfer(sql, scopeOf(ctx.auth), decode(schemas.RecordTransferBody, req.body, "body"), poster),
    }),
    reverseTransaction: async (req, ctx) => ({
      status: 201,
      body: await reverseTransaction(sql, scopeOf(ctx.auth), decode(schemas.ReverseTransactionBody, req.body, "body"), poster),
    }),
    getTransactions: async (req, ctx) => ({ body: await getTransactions(sql, scopeOf(ctx.auth), decode(schemas.GetTransactionsQuery, req.query, "query")) }),
    generateReport: async (req, ctx) => ({ body: await generateReport(sql, scopeOf(ctx.auth), decode(schemas.GenerateReportBody, req.body, "body")) }),
  };
  for (const [operation, handler] of Object.entries(ops)) svc.handle(operation, handler);
  svc.rpc.handleRaw("post", postHandler(sql, poster));
}

/**
 * `svc.ledger.post`: the payload is a PostRequest; the reply body is the PostResult plus `duplicate`. Plain
 * posting requests are group-committed (usecases/poster.ts); the reply is sent only after their COMMIT. A
 * refund (`refund` in the payload) has its postings computed by the ledger (usecases/refund.ts).
 */
export function postHandler(sql: Sql, poster: Poster): RawRpcHandler {
  return async (payload) => {
    try {
      const outcome = isRefund(payload) ? await postRefund(sql, poster, parsePostRequest(payload, true)) : await poster.post(payload);
      return { ok: true, status: 200, body: { duplicate: outcome.duplicate, ...outcome.result } };
    } catch (e) {
      if (e instanceof DomainError) return domainErrorReply(e);
      throw e;
    }
  };
}

/** A cheap look before parsing: nearly every request is a plain posting, parsed once by the Poster. */
function isRefund(payload: unknown): boolean {
  return typeof payload === "object" && payload !== null && (payload as Record<string, unknown>)["refund"] !== undefined;
}
