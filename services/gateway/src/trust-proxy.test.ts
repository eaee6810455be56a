// Proves TRUST_PROXY takes a list of proxy addresses/CIDRs, and refuses `true` (every hop trusted lets any client
// choose its own IP), a hop count (it cannot check the peer) and anything else it cannot read, at startup with the
// variable named.
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { BaseEnv, ConfigError, loadConfig } from "@treasury/service-kit";
import { GatewayEnv } from "./service.ts";

const schema = BaseEnv.extend(GatewayEnv);
const base = { DATABASE_URL: "postgres://localhost/x" };

function trustProxy(value: string | undefined): unknown {
  return loadConfig(schema, { ...base, TRUST_PROXY: value }).TRUST_PROXY;
}

function problems(value: string): string[] {
  try {
    loadConfig(schema, { ...base, TRUST_PROXY: value });
  } catch (e) {
    if (e instanceof ConfigError) return e.problems;
    throw e;
  }
  return [];
}

describe("TRUST_PROXY", () => {
  it("trusts no proxy by default and for `false`", () => {
    expect(trustProxy(undefined)).toBe(false);
    expect(trustProxy("false")).toBe(false);
  });

  it("reads a comma-separated list of addresses and CIDRs, IPv4 and IPv6", () => {
    expect(trustProxy("10.42.0.0/16")).toEqual(["10.42.0.0/16"]);
    expect(trustProxy("10.42.0.0/16, 192.0.2.7,fd00::/8 , ::1")).toEqual(["10.42.0.0/16", "192.0.2.7", "fd00::/8", "::1"]);
  });

  it("refuses `true`, saying why and what to set instead", () => {
    const [problem, ...rest] = problems("true");
    expect(rest).toEqual([]);
    expect(problem).toMatch(/^TRUST_PROXY: /);
    expect(problem).toMatch(/every hop/);
    expect(problem).toMatch(/addresses\/CIDRs/);
  });

  it("refuses a hop count, which cannot check that the peer is the proxy", () => {
    for (const hops of ["0", "1", "2", "-1"]) expect(problems(hops), hops).toEqual([expect.stringMatching(/^TRUST_PROXY: a hop count cannot check/)]);
  });

  it("refuses what are not addresses: bad addresses and prefixes, /0, empty items", () => {
    for (const bad of ["yes", "TRUE", "1.5", "10.0.0.0/33", "0.0.0.0/0", "::/0", "10.0.0.300", "10.0.0.1,,10.0.0.2", "ingress", "10.0.0.0/8/1"]) {
      expect(problems(bad), bad).toEqual([expect.stringMatching(/^TRUST_PROXY: /)]);
    }
  });

  it("has a type the app can hand to Fastify as is", () => {
    const parsed: false | string[] = loadConfig(schema, { ...base, TRUST_PROXY: "10.244.0.0/16" }).TRUST_PROXY;
    expect(z.union([z.literal(false), z.array(z.string())]).safeParse(parsed).success).toBe(true);
  });
});
