/**
 * Failed authentications, limited per client IP to slow key guessing, without ever refusing a valid key (behind a
 * proxy every client shares one IP: a trickle of bad keys must not lock the good ones out).
 *
 * - A key the cache answers costs nothing more when valid; an invalid one spends a token of the IP's budget,
 *   and past the budget the answer is 429 auth_rate_limited instead of 401.
 * - A key the cache does not know costs a database read. Its token is taken before the read, atomically, so
 *   concurrent guesses cannot all pass one look at the budget; a key that turns out valid gets its token back
 *   and passes whatever the budget. Past the budget, an IP's reads run one at a time, which bounds what a flood
 *   of made-up keys costs the database.
 */
import type { AuthResult, Authenticator } from "./auth.ts";
import type { BucketRule, RateLimiter, TakeResult } from "./ratelimit.ts";

export interface AuthVerdict {
  result: AuthResult;
  /** The IP's failure budget after this request, when it spent or checked one. */
  budget?: TakeResult;
  /** The key was invalid and the IP is past its budget: answer 429, not the authentication error. */
  limited: boolean;
}

function after<T, R>(v: T | Promise<T>, f: (t: T) => R): R | Promise<Awaited<R>> {
  return v instanceof Promise ? (v.then(f) as Promise<Awaited<R>>) : f(v);
}

export class AuthFailureLimiter {
  /** The read in flight per IP past its budget (reads run one at a time then). */
  private readonly serialized = new Map<string, Promise<unknown>>();

  constructor(
    private readonly limiter: RateLimiter,
    private readonly rule: BucketRule,
    private readonly authenticator: Pick<Authenticator, "authenticate" | "answerWithoutRead">,
  ) {}

  check(ip: string, presented: string | undefined): AuthVerdict | Promise<AuthVerdict> {
    const bucket = `authfail:${ip}`;
    const quick = this.authenticator.answerWithoutRead(presented);
    if (quick !== undefined) {
      if (quick.ok) return { result: quick, limited: false };
      return after(this.limiter.take(bucket, this.rule), (budget) => ({ result: quick, budget, limited: !budget.allowed }));
    }
    return after(this.limiter.take(bucket, this.rule), (budget) =>
      this.read(ip, budget.allowed, presented).then((result) => {
        if (!result.ok) return { result, budget, limited: !budget.allowed };
        // A valid key gives its token back (a read spent it only because the cache was cold).
        if (budget.allowed) void Promise.resolve(this.limiter.take(bucket, this.rule, -1)).catch(() => undefined);
        return { result, limited: false };
      }),
    );
  }

  private read(ip: string, withinBudget: boolean, presented: string | undefined): Promise<AuthResult> {
    if (withinBudget) return Promise.resolve(this.authenticator.authenticate(presented));
    const previous = this.serialized.get(ip) ?? Promise.resolve();
    const mine = previous.then(() => this.authenticator.authenticate(presented));
    const tail = mine.catch(() => undefined);
    this.serialized.set(ip, tail);
    void tail.then(() => {
      if (this.serialized.get(ip) === tail) this.serialized.delete(ip);
    });
    return mine;
  }
}
