/**
 * `createClient`: one method per operation, grouped by resource (resources.ts), with arguments typed from the
 * OpenAPI document: the path's parameters in order, then the body (or, for a GET, the query), then call options.
 * Paged lists also have `.all(…)`, an async iterator over every item.
 *
 *   const treasury = createClient({ apiKey, baseUrl });
 *   await treasury.participants.create({ participant_id: "creator_1", display_name: "Ada" });
 *   await treasury.wallets.topUp(walletId, { amount: 2_500, reference_id: "topup_1" });
 *   for await (const e of treasury.wallets.entries.all(walletId)) …
 */
import type { operations } from "./generated/openapi.ts";
import { OPERATIONS, type OperationId } from "./generated/operations.ts";
import { iterate, type PagingStyle } from "./paging.ts";
import { NO_ITERATOR, RESOURCES } from "./resources.ts";
import { Transport, type ApiResponse, type CallOptions, type ClientOptions, type RequestInput } from "./transport.ts";

type Meta<I extends OperationId> = (typeof OPERATIONS)[I];
type PathStrings<P extends string> = P extends `${string}{${string}}${infer Rest}` ? [string, ...PathStrings<Rest>] : [];
/** One string per path parameter, in the path's order. */
export type PathArgs<I extends OperationId> = PathStrings<Meta<I>["path"]>;

type JsonBody<I extends OperationId> = operations[I] extends { requestBody: { content: { "application/json": infer B } } }
  ? B
  : operations[I] extends { requestBody?: { content: { "application/json": infer B } } }
    ? B
    : never;
/** An `idempotency_key` operation's key is optional: the client makes one per call when it is not given. */
type WithOptionalKey<B> = B extends unknown ? Omit<B, "idempotency_key"> & { idempotency_key?: string } : never;
/** The body an operation takes. */
export type Body<I extends OperationId> = Meta<I>["replayKey"] extends "idempotency_key" ? WithOptionalKey<JsonBody<I>> : JsonBody<I>;
/** The query an operation takes. */
export type Query<I extends OperationId> = operations[I] extends { parameters: { query?: infer Q } } ? NonNullable<Q> : never;

type BodyArgs<I extends OperationId> = [...PathArgs<I>, ...(object extends Body<I> ? [body?: Body<I>] : [body: Body<I>]), options?: CallOptions];
type QueryArgs<I extends OperationId> = [...PathArgs<I>, query?: Query<I>, options?: CallOptions];
export type Args<I extends OperationId> = Meta<I>["body"] extends true
  ? BodyArgs<I>
  : Meta<I>["query"] extends true
    ? QueryArgs<I>
    : [...PathArgs<I>, options?: CallOptions];

/** `.all(…)`: every item of a paged list, fetched page by page as the loop goes. */
type Iterable<I extends OperationId> = I extends (typeof NO_ITERATOR)[number]
  ? unknown
  : Meta<I>["paging"] extends PagingStyle
    ? { all<T = Record<string, unknown>>(...args: QueryArgs<I>): AsyncGenerator<T> }
    : unknown;

/**
 * One operation. The OpenAPI document describes requests, not answers, so an answer is the success envelope; name
 * the fields a call relies on with `R`: `await client.payouts.get<{ payout: Payout }>(id)`.
 */
export type Method<I extends OperationId> = (<R extends object = Record<string, unknown>>(...args: Args<I>) => Promise<ApiResponse & R>) & Iterable<I>;

type Resources = typeof RESOURCES;
export type TreasuryClient = { [G in keyof Resources]: { [M in keyof Resources[G]]: Method<Resources[G][M] & OperationId> } } & {
  /** Any operation by its OpenAPI `operationId`, for what the typed methods do not cover yet. */
  call(id: OperationId, input: RequestInput, options?: CallOptions): Promise<ApiResponse>;
};

function pathCount(id: OperationId): number {
  return (OPERATIONS[id].path.match(/\{[A-Za-z_]+\}/g) ?? []).length;
}

type Obj = Record<string, unknown> | undefined;

/** Reads the positional arguments of `Args<I>` back into a request. */
function parseArgs(id: OperationId, args: unknown[]): { input: RequestInput; options: CallOptions | undefined } {
  const n = pathCount(id);
  const path = args.slice(0, n).map((a) => String(a));
  const [first, second] = args.slice(n) as [unknown, unknown];
  const op = OPERATIONS[id];
  if (op.body) return { input: { path, body: (first as Obj) ?? {} }, options: second as CallOptions | undefined };
  if (op.query) return { input: { path, query: first as Obj }, options: second as CallOptions | undefined };
  return { input: { path }, options: first as CallOptions | undefined };
}

function bindOperation(transport: Transport, id: OperationId): (...args: unknown[]) => Promise<ApiResponse> {
  const method = (...args: unknown[]) => {
    const { input, options } = parseArgs(id, args);
    return transport.call(id, input, options);
  };
  const paging = OPERATIONS[id].paging;
  if (paging !== null && !(NO_ITERATOR as readonly string[]).includes(id)) {
    Object.assign(method, {
      all(...args: unknown[]) {
        const { input, options } = parseArgs(id, args);
        return iterate(paging, (query) => transport.call(id, { ...input, query }, options), input.query ?? {});
      },
    });
  }
  return method;
}

export function createClient(options: ClientOptions): TreasuryClient {
  const transport = new Transport(options);
  const client: Record<string, unknown> = {
    call: (id: OperationId, input: RequestInput, opts?: CallOptions) => transport.call(id, input, opts),
  };
  for (const [group, methods] of Object.entries(RESOURCES)) {
    client[group] = Object.fromEntries(Object.entries(methods).map(([name, id]) => [name, bindOperation(transport, id)]));
  }
  return client as TreasuryClient;
}
