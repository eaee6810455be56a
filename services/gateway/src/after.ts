/** `f(v)` now when `v` is a value, after it resolves when it is a promise: no promise on the hot path. */
export function after<T, R>(v: T | Promise<T>, f: (t: T) => R): R | Promise<Awaited<R>> {
  return v instanceof Promise ? (v.then(f) as Promise<Awaited<R>>) : f(v);
}
