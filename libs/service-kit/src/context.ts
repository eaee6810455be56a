/**
 * One AsyncLocalStorage per process for the work in progress: the request id (for log lines) and the
 * OpenTelemetry context (for spans and propagation). On Node 20 every AsyncLocalStorage instance in use adds
 * work to every promise the process creates, so the kit's context manager and the request context share one.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { context, ROOT_CONTEXT } from "@opentelemetry/api";
import type { Context, ContextManager } from "@opentelemetry/api";

interface Store {
  requestId: string | undefined;
  otel: Context;
}

const store = new AsyncLocalStorage<Store>();

/** The request id of the work in progress, carried across awaits so every log line can name it. */
export const requestContext = {
  run<T>(ctx: { requestId: string }, fn: () => T): T {
    return store.run({ requestId: ctx.requestId, otel: store.getStore()?.otel ?? ROOT_CONTEXT }, fn);
  },
  get(): { requestId: string } | undefined {
    const s = store.getStore();
    return s?.requestId === undefined ? undefined : { requestId: s.requestId };
  },
};

/**
 * The work in progress's context (request id and trace), captured to run later work as part of it: work a
 * queue runs for a caller (a batch step) then logs and emits events under the caller's request, not under
 * whichever request happened to start the queue.
 */
export function captureContext(): <T>(fn: () => T) => T {
  const captured = store.getStore();
  return (fn) => (captured === undefined ? fn() : store.run(captured, fn));
}

/** The OpenTelemetry context manager the kit registers: the same storage as requestContext. */
export class KitContextManager implements ContextManager {
  private enabled = false;

  active(): Context {
    return (this.enabled && store.getStore()?.otel) || ROOT_CONTEXT;
  }

  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(ctx: Context, fn: F, thisArg?: ThisParameterType<F>, ...args: A): ReturnType<F> {
    if (!this.enabled) return fn.call(thisArg, ...args);
    return store.run({ requestId: store.getStore()?.requestId, otel: ctx }, () => fn.call(thisArg, ...args));
  }

  bind<T>(ctx: Context, target: T): T {
    if (typeof target !== "function") return target;
    const fn = target as unknown as (...a: unknown[]) => unknown;
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    const manager = this;
    return function (this: unknown, ...a: unknown[]) {
      return manager.with(ctx, () => fn.apply(this, a));
    } as unknown as T;
  }

  enable(): this {
    this.enabled = true;
    return this;
  }

  disable(): this {
    this.enabled = false;
    return this;
  }
}

/** True once the kit's manager is the global one (false when a test or host registered its own). */
let kitManagerIsGlobal = false;

/**
 * Called after the SDK starts: is the global context manager the kit's? (Asked without running anything in a
 * context: the first run would switch on Node's async hooks for the whole process, which a process that
 * never needs them, like the gateway, should not pay for.)
 */
export function noteContextManagerRegistered(manager: ContextManager): void {
  const api = context as unknown as { _getContextManager?: () => ContextManager };
  kitManagerIsGlobal = api._getContextManager?.() === manager;
}

/**
 * Runs `fn` as one request's work: its request id and OpenTelemetry context are active across its awaits.
 * One storage run when the kit's context manager is registered; otherwise the two contexts nest.
 */
export function runInRequestContext<T>(requestId: string, otel: Context, fn: () => T): T {
  if (kitManagerIsGlobal) return store.run({ requestId, otel }, fn);
  return requestContext.run({ requestId }, () => context.with(otel, fn));
}
