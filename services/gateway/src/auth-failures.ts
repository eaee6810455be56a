/**
 * Failed authentications, limited per client IP to slow key guessing (ADR 0002).
 *
 * - A key the cache answers costs nothing more when valid, whatever the IP's budget: behind a shared proxy a
 *   trickle of bad keys must not lock the good ones out. An invalid one spends a token of the IP's budget, and
 *   past the budget the answer is 429 auth_rate_limited instead of 401.
 * - A key the cache does not know costs a database read. Its token is taken before the read, atomically, so
 *   concurrent guesses cannot all pass one look at the budget; a key that turns out valid gets its token back.
 *   Past the budget the answer is 429 at once and nothing is read: a flood of made-up keys costs the database
 *   nothing, and the guesser learns nothing either. A valid key this gateway has not cached waits for a token
 *   like any other until the budget refills.
 */
import { after } from "./after.ts";
import type { AuthResult, Authenticator } from "./auth.ts";
import type { BucketRule, RateLimiter, TakeResult } from "./ratelimit.ts";

export interface AuthVerdict {
  result: AuthResult;
  /** The IP's failure budget after this request, when it spent or checked one. */
  budget?: TakeResult;
  /** The IP is past its budget and the key was invalid or left unread: answer 429, not the authentication error. */
  limited: boolean;
}

/** What an unread key counts as past the budget: it was never looked at, so it is not known to be valid. */
const UNREAD: AuthResult = { ok: false, code: "invalid_api_key" };

export class AuthFailureLimiter {
  /** Checks of a key the cache does not hold, from the budget's token to the read's answer, by presented key. */
  private readonly checks = new Map<string, Promise<AuthResult>>();

  constructor(
    private readonly limiter: RateLimiter,
    private readonly rule: BucketRule,
    private readonly authenticator: Pick<Authenticator, "authenticate" | "answerWithoutRead" | "readInFlight">,
  ) {}

  check(ip: string, presented: string | undefined): AuthVerdict | Promise<AuthVerdict> {
    const bucket = `authfail:${ip}`;
    const quick = this.authenticator.answerWithoutRead(presented);
    if (quick !== undefined) {
      if (quick.ok) return { result: quick, limited: false };
      return this.spend(bucket, quick);
    }
    // One check answers every request that arrives with the key while it runs, from the moment its token is asked
    // for (a Redis round trip) to the read's answer: only the first spends a token, so a burst of one valid key
    // larger than the budget (a cold cache under load) is never refused.
    const joined = (presented !== undefined ? this.checks.get(presented) : undefined) ?? this.authenticator.readInFlight(presented);
    if (joined !== undefined) return joined.then((result) => (result.ok ? { result, limited: false } : this.spend(bucket, result)));
    const verdict = after(this.limiter.take(bucket, this.rule), (budget) => {
      if (!budget.allowed) return { result: UNREAD, budget, limited: true };
      return this.read(bucket, budget, presented);
    });
    if (presented !== undefined && verdict instanceof Promise) this.track(presented, verdict);
    return verdict;
  }

  private track(presented: string, verdict: Promise<AuthVerdict>): void {
    const result = verdict.then((v) => v.result);
    this.checks.set(presented, result);
    const done = () => {
      if (this.checks.get(presented) === result) this.checks.delete(presented);
    };
    result.then(done, done);
  }

  /** A key known to be invalid spends a token; past the budget its answer is 429. */
  private spend(bucket: string, result: AuthResult): AuthVerdict | Promise<AuthVerdict> {
    return after(this.limiter.take(bucket, this.rule), (budget) => ({ result, budget, limited: !budget.allowed }));
  }

  private async read(bucket: string, budget: TakeResult, presented: string | undefined): Promise<AuthVerdict> {
    const result = await this.authenticator.authenticate(presented);
    if (!result.ok) return { result, budget, limited: false };
    // A valid key gives its token back (a read spent it only because the cache was cold).
    void Promise.resolve(this.limiter.take(bucket, this.rule, -1)).catch(() => undefined);
    return { result, limited: false };
  }
}
