// Proves the pure webhook rules: signatures a Standard Webhooks receiver accepts, address classification,
// URL rules per environment, the retry schedule and event filters.
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { Webhook } from "standardwebhooks";
import { DomainError } from "@treasury/contracts";
import { eventFilterProblems, matchesFilter, webhookBody } from "./events.ts";
import { isBlockedAddress } from "./ip.ts";
import { DEFAULT_RETRY_SCHEDULE_MS, nextDelayMs, parseSchedule } from "./schedule.ts";
import { SECRET_BYTES, secretFromBytes, signatureHeader } from "./signing.ts";
import { checkUrlShape } from "./url.ts";

const newSecret = (): string => secretFromBytes(randomBytes(SECRET_BYTES));

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
    return undefined;
  } catch (e) {
    return e instanceof DomainError ? e.code : "not a DomainError";
  }
}

describe("signing", () => {
  it("secrets are whsec_ + base64 of 24 bytes", () => {
    // Proves the secret format of docs/api.md, Webhooks.
    const s = newSecret();
    expect(s).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    expect(Buffer.from(s.slice(6), "base64")).toHaveLength(24);
  });

  it("the standardwebhooks library verifies our signature, and rejects a tampered body", () => {
    // Proves a receiver using the reference library accepts what we send, and only that.
    const secret = newSecret();
    const body = webhookBody(
      { id: "evt_1", type: "payout.failed", created_at: new Date().toISOString(), livemode: false, sequence: 3, data: { a: 1 } },
      "we_1",
    );
    const ts = Math.floor(Date.now() / 1000);
    const headers = { "webhook-id": "whd_abc", "webhook-timestamp": String(ts), "webhook-signature": signatureHeader([secret], "whd_abc", ts, body) };
    expect(new Webhook(secret).verify(body, headers)).toMatchObject({ id: "evt_1", mode: "sandbox", sequence: 3 });
    expect(() => new Webhook(secret).verify(body.replace('"a":1', '"a":2'), headers)).toThrow();
    expect(() => new Webhook(newSecret()).verify(body, headers)).toThrow();
  });

  it("two secrets give two space-separated signatures and either one verifies", () => {
    // Proves rotation: receivers on the old or the new secret both accept the message.
    const [oldS, newS] = [newSecret(), newSecret()];
    const ts = Math.floor(Date.now() / 1000);
    const sig = signatureHeader([newS, oldS], "whd_x", ts, "{}");
    expect(sig.split(" ")).toHaveLength(2);
    expect(sig.split(" ").every((p) => p.startsWith("v1,"))).toBe(true);
    const headers = { "webhook-id": "whd_x", "webhook-timestamp": String(ts), "webhook-signature": sig };
    expect(new Webhook(oldS).verify("{}", headers)).toEqual({});
    expect(new Webhook(newS).verify("{}", headers)).toEqual({});
  });
});

describe("addresses", () => {
  it("private, loopback, link-local and special ranges are blocked; public ones are not", () => {
    // Proves the SSRF guard's classification, including IPv4 embedded in IPv6.
    for (const a of [
      "127.0.0.1",
      "10.1.2.3",
      "172.16.0.1",
      "172.31.255.255",
      "192.168.1.1",
      "169.254.169.254",
      "100.64.0.1",
      "0.0.0.0",
      "224.0.0.1",
      "255.255.255.255",
      "::1",
      "::",
      "fe80::1",
      "fc00::1",
      "fd12:3456::1",
      "::ffff:127.0.0.1",
      "::ffff:7f00:1",
      "::ffff:169.254.169.254",
      "64:ff9b::10.0.0.1",
      "[::1]",
      "not-an-ip",
    ]) {
      expect(isBlockedAddress(a), a).toBe(true);
    }
    for (const a of ["1.1.1.1", "8.8.8.8", "172.32.0.1", "2606:4700:4700::1111", "::ffff:1.1.1.1"]) expect(isBlockedAddress(a), a).toBe(false);
  });
});

describe("global unicast only", () => {
  // Each special-purpose range a live webhook must never reach, one address inside it (IANA IPv4 and IPv6
  // special-purpose registries): an allow-list of global unicast refuses them all, including IPv6 forms that
  // carry an IPv4 address (6to4, Teredo, NAT64 local use, IPv4-compatible).
  const refusedV4: Array<[string, string]> = [
    ["0.0.0.0/8 this network", "0.1.2.3"],
    ["10.0.0.0/8 private", "10.255.0.1"],
    ["100.64.0.0/10 CGNAT", "100.127.255.254"],
    ["127.0.0.0/8 loopback", "127.8.8.8"],
    ["169.254.0.0/16 link-local", "169.254.0.1"],
    ["172.16.0.0/12 private", "172.20.1.1"],
    ["192.0.0.0/24 IETF protocol assignments", "192.0.0.8"],
    ["192.0.2.0/24 TEST-NET-1", "192.0.2.10"],
    ["192.88.99.0/24 6to4 relay anycast", "192.88.99.1"],
    ["192.168.0.0/16 private", "192.168.77.1"],
    ["198.18.0.0/15 benchmarking", "198.19.255.1"],
    ["198.51.100.0/24 TEST-NET-2", "198.51.100.7"],
    ["203.0.113.0/24 TEST-NET-3", "203.0.113.9"],
    ["224.0.0.0/4 multicast", "239.1.2.3"],
    ["240.0.0.0/4 reserved", "250.0.0.1"],
    ["255.255.255.255 broadcast", "255.255.255.255"],
  ];
  const refusedV6: Array<[string, string]> = [
    ["::/128 unspecified", "::"],
    ["::1/128 loopback", "::1"],
    ["::/96 IPv4-compatible (public v4 inside)", "::8.8.8.8"],
    ["::/96 IPv4-compatible, hex form", "::808:808"],
    ["::ffff:0:0/96 mapped private", "::ffff:10.0.0.1"],
    ["64:ff9b::/96 NAT64 to a private v4", "64:ff9b::a00:1"],
    ["64:ff9b:1::/48 NAT64 local use", "64:ff9b:1::808:808"],
    ["64:ff9b:1::/48 NAT64 local use, dotted", "64:ff9b:1::8.8.8.8"],
    ["100::/64 discard", "100::1"],
    ["2001::/32 Teredo", "2001:0:4136:e378:8000:63bf:3fff:fdd2"],
    ["2001:2::/48 benchmarking", "2001:2::1"],
    ["2001:db8::/32 documentation", "2001:db8::1"],
    ["2002::/16 6to4 of a public v4", "2002:808:808::1"],
    ["2002::/16 6to4 of a private v4", "2002:a00:1::1"],
    ["3fff::/20 documentation", "3fff::1"],
    ["fc00::/7 unique local", "fd00::1"],
    ["fe80::/10 link-local", "fe80::1"],
    ["fec0::/10 site-local", "fec0::1"],
    ["ff00::/8 multicast", "ff02::1"],
    ["4000::/2 outside 2000::/3", "4000::1"],
    ["zone index", "fe80::1%eth0"],
  ];

  it.each(refusedV4)("refuses IPv4 %s", (_range, address) => {
    expect(isBlockedAddress(address)).toBe(true);
  });

  it.each(refusedV6)("refuses IPv6 %s", (_range, address) => {
    expect(isBlockedAddress(address)).toBe(true);
  });

  it("allows global unicast, and IPv4 inside mapped or well-known NAT64 IPv6 by that IPv4 address", () => {
    // Proves the allow-list is not so tight that ordinary public receivers are refused.
    for (const a of [
      "1.1.1.1",
      "8.8.8.8",
      "100.128.0.1",
      "172.32.0.1",
      "198.20.0.1",
      "2606:4700:4700::1111",
      "2a00:1450:4001:80b::200e",
      "[2001:4860:4860::8888]",
      "::ffff:1.1.1.1",
      "::ffff:101:101",
      "64:ff9b::8.8.8.8",
      "64:ff9b::808:808",
    ]) {
      expect(isBlockedAddress(a), a).toBe(false);
    }
  });
});

describe("URL rules", () => {
  it("live needs https and a public host; sandbox also allows http to localhost only", () => {
    // Proves the per-environment URL policy that runs before any DNS lookup.
    expect(codeOf(() => checkUrlShape("http://example.com/h", true))).toBe("invalid_webhook_url");
    expect(codeOf(() => checkUrlShape("https://127.0.0.1/h", true))).toBe("invalid_webhook_url");
    expect(codeOf(() => checkUrlShape("https://[::1]/h", true))).toBe("invalid_webhook_url");
    expect(codeOf(() => checkUrlShape("https://169.254.169.254/latest", true))).toBe("invalid_webhook_url");
    expect(codeOf(() => checkUrlShape("https://localhost/h", true))).toBe("invalid_webhook_url");
    expect(codeOf(() => checkUrlShape("https://user:pw@example.com/h", true))).toBe("invalid_webhook_url");
    expect(codeOf(() => checkUrlShape("ftp://example.com/h", false))).toBe("invalid_webhook_url");
    expect(codeOf(() => checkUrlShape("not a url", false))).toBe("invalid_webhook_url");
    expect(codeOf(() => checkUrlShape("http://example.com/h", false, true))).toBe("invalid_webhook_url");
    expect(codeOf(() => checkUrlShape("http://10.0.0.1/h", false, true))).toBe("invalid_webhook_url");
    expect(checkUrlShape("https://1.1.1.1/h", true).resolveHost).toBeUndefined();
    expect(checkUrlShape("https://hooks.example.com/h", true).resolveHost).toBe("hooks.example.com");
    expect(checkUrlShape("http://localhost:8080/h", false, true).url.port).toBe("8080");
    expect(checkUrlShape("http://127.0.0.1:9/h", false, true).resolveHost).toBeUndefined();
    expect(checkUrlShape("https://hooks.example.com/h", false, true).resolveHost).toBeUndefined();
    // Private URLs allowed by the deployment never apply to live.
    expect(codeOf(() => checkUrlShape("https://127.0.0.1/h", true, true))).toBe("invalid_webhook_url");
  });

  it("sandbox follows the live rules unless the deployment allows private URLs", () => {
    // Proves a sandbox key cannot aim an endpoint at the host's own network on a deployment that does not allow it.
    for (const url of [
      "http://localhost:5432/h",
      "http://127.0.0.1:9/h",
      "http://[::1]:22/h",
      "https://127.0.0.1/h",
      "https://10.0.0.7/h",
      "https://169.254.169.254/latest",
      "https://localhost/h",
      "https://[::ffff:192.168.0.1]/h",
      "http://example.com/h",
    ]) {
      expect(
        codeOf(() => checkUrlShape(url, false)),
        url,
      ).toBe("invalid_webhook_url");
    }
    expect(checkUrlShape("https://1.1.1.1/h", false).resolveHost).toBeUndefined();
    // A name is resolved and checked like a live one.
    expect(checkUrlShape("https://hooks.example.com/h", false).resolveHost).toBe("hooks.example.com");
  });
});

describe("schedule", () => {
  it("follows now, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h within ±10 % and then stops", () => {
    // Proves the default schedule, its jitter bounds and the end of retries.
    const s = DEFAULT_RETRY_SCHEDULE_MS;
    expect(s).toHaveLength(8);
    for (let made = 1; made < 8; made++) {
      const base = s[made] as number;
      expect(nextDelayMs(s, made, 8, 0)).toBe(Math.round(base * 0.9));
      expect(nextDelayMs(s, made, 8, 0.5)).toBe(base);
      expect(nextDelayMs(s, made, 8, 0.999999)).toBeLessThanOrEqual(Math.round(base * 1.1));
    }
    expect(nextDelayMs(s, 8, 8, 0.5)).toBeNull();
    expect(nextDelayMs(s, 3, 3, 0.5)).toBeNull();
  });

  it("parses a configured schedule and refuses a malformed one", () => {
    // Proves WEBHOOK_RETRY_SCHEDULE_MS parsing fails loudly on bad input.
    expect(parseSchedule("0,50, 100")).toEqual([0, 50, 100]);
    for (const bad of ["", "a", "1,,2", "-1", "1.5", "0,99999999999"]) expect(() => parseSchedule(bad), bad).toThrow();
  });
});

describe("event filters", () => {
  it("accept * and public types only; match * and exact types", () => {
    // Proves endpoint filters cannot name internal or unknown event types.
    expect(eventFilterProblems(["*"])).toEqual([]);
    expect(eventFilterProblems(["payout.failed", "checkout.completed"])).toEqual([]);
    expect(eventFilterProblems(["ledger.transaction.posted", "nope"]).map((p) => p.path)).toEqual(["events.0", "events.1"]);
    expect(eventFilterProblems([])).toHaveLength(1);
    expect(matchesFilter(["*"], "payout.failed")).toBe(true);
    expect(matchesFilter(["payout.failed"], "payout.failed")).toBe(true);
    expect(matchesFilter(["payout.created"], "payout.failed")).toBe(false);
  });
});
