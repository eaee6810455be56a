/** RPC handlers of the ledger: decode with the shared contracts → use case → named-key body. */
import { DomainError, schemas } from "@treasury/contracts";
import type { RawRpcHandler, RpcHandler, Service } from "@treasury/service-kit";
import { domainErrorReply } from "@treasury/service-kit";
import { z } from "zod";
import { post, type PostDeps } from "../usecases/post.ts";
import { createParticipant, getParticipant, listParticipants } from "../usecases/participants.ts";
import { createWallet, getWallet, listWalletEntries, listWallets, WALLET_PAGE_DEFAULT } from "../usecases/wallets.ts";
import { depositToWallet, transferBetweenWallets, withdrawFromWallet } from "../usecases/movements.ts";
import { createHold, getHoldsSummary, listHolds, releaseHold } from "../usecases/holds.ts";
import { decode, param, scopeOf } from "./decode.ts";

/** Holds lists accept an offset too (the shared query schema names only limit). */
const HoldsOffset = z.object({ offset: schemas.pagingInt(0, 1_000_000_000).optional() });

export function registerHandlers(svc: Pick<Service, "sql" | "handle" | "rpc">, deps: PostDeps = {}): void {
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
      body: await depositToWallet(sql, scopeOf(ctx.auth), param(req.params, "wallet_id"), decode(schemas.WalletMovementBody, req.body, "body"), deps),
    }),
    withdrawFromWallet: async (req, ctx) => ({
      status: 201,
      body: await withdrawFromWallet(sql, scopeOf(ctx.auth), param(req.params, "wallet_id"), decode(schemas.WalletMovementBody, req.body, "body"), deps),
    }),
    transferBetweenWallets: async (req, ctx) => ({
      status: 201,
      body: await transferBetweenWallets(sql, scopeOf(ctx.auth), decode(schemas.TransferBody, req.body, "body"), deps),
    }),
    createHold: async (req, ctx) => ({
      status: 201,
      body: await createHold(sql, scopeOf(ctx.auth), decode(schemas.CreateHoldBody, req.body, "body"), deps),
    }),
    listHolds: async (req, ctx) => {
      const q = decode(schemas.ListHoldsQuery, req.query, "query");
      const o = decode(HoldsOffset, req.query, "query");
      return { body: await listHolds(sql, scopeOf(ctx.auth), { ...q, offset: o.offset }) };
    },
    getHoldsSummary: async (_req, ctx) => ({ body: await getHoldsSummary(sql, scopeOf(ctx.auth)) }),
    releaseHold: async (req, ctx) => ({
      body: await releaseHold(sql, scopeOf(ctx.auth), param(req.params, "hold_id"), decode(schemas.ReleaseHoldBody, req.body, "body"), deps),
    }),
  };
  for (const [operation, handler] of Object.entries(ops)) svc.handle(operation, handler);
  svc.rpc.handleRaw("post", postHandler(sql, deps));
}

/** `svc.ledger.post`: the payload is a PostRequest; the reply body is the PostResult plus `duplicate`. */
export function postHandler(sql: Service["sql"], deps: PostDeps = {}): RawRpcHandler {
  return async (payload) => {
    try {
      const outcome = await post(sql, payload, deps);
      return { ok: true, status: 200, body: { duplicate: outcome.duplicate, ...outcome.result } };
    } catch (e) {
      if (e instanceof DomainError) return domainErrorReply(e);
      throw e;
    }
  };
}
