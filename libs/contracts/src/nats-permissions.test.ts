// Proves the permission matrix says what ADR 0011 promises, for every identity at once: public operations only from the
// gateway, svc.ledger.post only from the services that move money, each service subscribed to itself and its inbox only,
// replies only on the callee's own branch of a caller's inbox, each event type from its owner only, and the EVENTS
// stream created and updated by the migrations identity only.
import { describe, expect, it } from "vitest";
import { EVENT_OWNERS, eventSubject, PUBLIC_EVENT_TYPES, INTERNAL_EVENT_TYPES, eventOwner } from "./events.ts";
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
      const expected = identity === "admin" || identity === "migrations" ? [`_INBOX_${identity}.>`] : [`svc.${identity}.>`, `_INBOX_${identity}.>`];
      expect(natsPermissions(identity).subscribe, identity).toEqual(expected);
    }
  });

  it("lets a callee answer only its own branch of its callers' inboxes", () => {
    expect(NATS_IDENTITIES.filter((i) => mayPublish(i, "_INBOX_payouts.ledger.c1.t1"))).toEqual(["ledger"]);
    expect(NATS_IDENTITIES.filter((i) => mayPublish(i, "_INBOX_payouts.kyc.c1.t1"))).toEqual(["kyc"]);
    expect(NATS_IDENTITIES.filter((i) => mayPublish(i, "_INBOX_payouts.c1.t1"))).toEqual([]);
    // payments does not call kyc: kyc may not answer it at all.
    expect(NATS_IDENTITIES.filter((i) => mayPublish(i, "_INBOX_payments.kyc.c1.t1"))).toEqual([]);
    expect(NATS_IDENTITIES.filter((i) => mayPublish(i, "_INBOX_test.kyc.c1.t1", { alsoAnswer: ["test"] }))).toContain("kyc");
  });

  it("lets only an event type's owner publish it (webhooks also the public ones, for sandbox test events)", () => {
    for (const type of [...PUBLIC_EVENT_TYPES, ...INTERNAL_EVENT_TYPES]) {
      const owner = eventOwner(type);
      expect(owner, type).toBeDefined();
      const publishers = NATS_IDENTITIES.filter((i) => mayPublish(i, eventSubject("", type)));
      const expected = PUBLIC_EVENT_TYPES.includes(type as never) && owner !== "webhooks" ? [owner, "webhooks"] : [owner];
      expect(publishers.sort(), type).toEqual(expected.sort());
    }
    expect(NATS_IDENTITIES.filter((i) => mayPublish(i, "evt.bank_account.updated")).sort()).toEqual(["payouts", "webhooks"]);
    expect(Object.values(EVENT_OWNERS)).not.toContain("gateway");
    expect(natsPermissions("gateway").publish.filter((p) => p.startsWith("evt."))).toEqual([]);
  });

  it("lets only the migrations identity create or update the EVENTS stream; every service reads its info", () => {
    for (const action of ["CREATE", "UPDATE"]) {
      expect(NATS_IDENTITIES.filter((i) => mayPublish(i, `$JS.API.STREAM.${action}.EVENTS`))).toEqual(["migrations"]);
      expect(NATS_IDENTITIES.filter((i) => mayPublish(i, `$JS.API.STREAM.${action}.t1_EVENTS`, { anyPrefix: true }))).toEqual(["migrations"]);
    }
    expect(NATS_IDENTITIES.filter((i) => mayPublish(i, "$JS.API.STREAM.INFO.EVENTS"))).not.toContain("admin");
    expect(natsPermissions("migrations").publish.some((p) => p.startsWith("evt.") || p.startsWith("svc."))).toBe(false);
  });

  it("renders users with quoted subjects and the password as given", () => {
    const config = natsServerAuthorization(natsUsers((i) => `$PW_${i}`));
    expect(config).toContain('{ user: "ledger", password: $PW_ledger, permissions: { publish: { allow: [');
    expect(config).toContain('"$JS.API.STREAM.CREATE.EVENTS"');
    expect(config.match(/user: /g)).toHaveLength(NATS_IDENTITIES.length);
  });
});
