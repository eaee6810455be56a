// Proves the permission matrix says what ADR 0011 promises, for every identity at once: public operations only from the
// gateway, svc.ledger.post only from the services that move money, each service subscribed to itself and its inbox only.
import { describe, expect, it } from "vitest";
import { LEDGER_POSTERS, NATS_IDENTITIES, natsPermissions, natsServerAuthorization, natsUsers } from "./nats-permissions.ts";
import { PAGE_ROUTES, ROUTES } from "./routes.ts";
import { rpcSubject } from "./rpc.ts";

/** Whether a NATS subject pattern matches a literal subject (`*` one token, `>` the rest). */
function matches(pattern: string, subject: string): boolean {
  const p = pattern.split(".");
  const s = subject.split(".");
  for (let i = 0; i < p.length; i++) {
    if (p[i] === ">") return s.length > i;
    if (s[i] === undefined || (p[i] !== "*" && p[i] !== s[i])) return false;
  }
  return p.length === s.length;
}

const mayPublish = (identity: (typeof NATS_IDENTITIES)[number], subject: string, opts = {}) =>
  natsPermissions(identity, opts).publish.some((p) => matches(p, subject));

describe("NATS permission matrix", () => {
  it("lets only the gateway publish the public operations and hosted pages", () => {
    const publicSubjects = [...ROUTES.filter((r) => r.service !== "gateway"), ...PAGE_ROUTES].map((r) => rpcSubject("", r.service, r.operation));
    expect(publicSubjects.length).toBeGreaterThan(40);
    for (const subject of publicSubjects) {
      expect(
        NATS_IDENTITIES.filter((i) => mayPublish(i, subject)),
        subject,
      ).toEqual(["gateway"]);
      expect(
        NATS_IDENTITIES.filter((i) => mayPublish(i, `t1a2b.${subject}`, { anyPrefix: true })),
        subject,
      ).toEqual(["gateway"]);
    }
  });

  it("lets only payments, payouts and refunds post to the ledger", () => {
    expect(NATS_IDENTITIES.filter((i) => mayPublish(i, "svc.ledger.post"))).toEqual([...LEDGER_POSTERS]);
    expect(NATS_IDENTITIES.filter((i) => mayPublish(i, "svc.ledger.post", { prefix: "dev." }))).toEqual([]);
    expect(NATS_IDENTITIES.filter((i) => mayPublish(i, "dev.svc.ledger.post", { prefix: "dev." }))).toEqual([...LEDGER_POSTERS]);
  });

  it("subscribes every identity to its own subjects and inbox, nothing else", () => {
    for (const identity of NATS_IDENTITIES) {
      const expected = identity === "admin" ? [`_INBOX_${identity}.>`] : [`svc.${identity}.>`, `_INBOX_${identity}.>`];
      expect(natsPermissions(identity).subscribe, identity).toEqual(expected);
    }
  });

  it("renders users with quoted subjects and the password as given", () => {
    const config = natsServerAuthorization(natsUsers((i) => `$PW_${i}`));
    expect(config).toContain('{ user: "ledger", password: $PW_ledger, permissions: { publish: { allow: [');
    expect(config).toContain('"$JS.API.STREAM.CREATE.EVENTS"');
    expect(config.match(/user: /g)).toHaveLength(NATS_IDENTITIES.length);
  });
});
