// Proves TRUST_PROXY takes a hop count or a list of proxy addresses/CIDRs, and refuses `true` (every hop trusted
// lets any client choose its own IP) and anything else it cannot read, at startup with the variable named.
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
  it("trusts no proxy by default and for `false` or 0", () => {
    expect(trustProxy(undefined)).toBe(false);
    expect(trustProxy("false")).toBe(false);
    expect(trustProxy("0")).toBe(false);
  });

  it("reads a hop count", () => {
    expect(trustProxy("1")).toBe(1);
    expect(trustProxy(" 2 ")).toBe(2);
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
    expect(problem).toMatch(/hop count/);
  });

  it("refuses what is neither a hop count nor addresses: bad addresses, /0, negative or huge counts, empty items", () => {
    for (const bad of ["yes", "TRUE", "-1", "1.5", "100", "10.0.0.0/33", "0.0.0.0/0", "::/0", "10.0.0.300", "10.0.0.1,,10.0.0.2", "ingress", "10.0.0.0/8/1"]) {
      expect(problems(bad), bad).toEqual([expect.stringMatching(/^TRUST_PROXY: /)]);
    }
  });

  it("has a type the app can hand to Fastify as is", () => {
    const parsed: false | number | string[] = loadConfig(schema, { ...base, TRUST_PROXY: "1" }).TRUST_PROXY;
    expect(z.union([z.literal(false), z.number(), z.array(z.string())]).safeParse(parsed).success).toBe(true);
  });
});
