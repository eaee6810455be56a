// Proves every overlay runs the gateway trusting only a private pod range (where the ingress controller, the only
// peer the NetworkPolicy lets in, gets its addresses), with a value the gateway's own config parser accepts: never
// `true` or a public range, which would let a client choose the IP its rate limits and audit records are keyed by.
import { BlockList } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { repoRoot } from "@treasury/testing";
import { parseTrustProxy } from "../../services/gateway/src/trust-proxy.ts";
import { preparedCopy, render, type K8sObject } from "./manifests.ts";

type Deployment = K8sObject & { spec: { template: { spec: { containers: { name: string; env?: { name: string; value?: string }[] }[] } } } };

const OVERLAYS = ["dev", "prod"] as const;

/** RFC 1918 and IPv6 unique-local ranges: where pod networks live. */
const PRIVATE = new BlockList();
PRIVATE.addSubnet("10.0.0.0", 8, "ipv4");
PRIVATE.addSubnet("172.16.0.0", 12, "ipv4");
PRIVATE.addSubnet("192.168.0.0", 16, "ipv4");
PRIVATE.addSubnet("fc00::", 7, "ipv6");

/** A CIDR lies inside a private range when its first address does and it is no wider than the range. */
function isPrivateRange(cidr: string): boolean {
  const [address = "", bits] = cidr.split("/");
  const family = address.includes(":") ? "ipv6" : "ipv4";
  const prefix = bits === undefined ? (family === "ipv4" ? 32 : 128) : Number(bits);
  const narrowest = family === "ipv4" ? (address.startsWith("10.") ? 8 : address.startsWith("172.") ? 12 : 16) : 7;
  return PRIVATE.check(address, family) && prefix >= narrowest;
}
let copy: ReturnType<typeof preparedCopy>;

beforeAll(() => {
  copy = preparedCopy(repoRoot());
});

afterAll(() => copy?.remove());

describe("gateway TRUST_PROXY in k8s", () => {
  it.each(OVERLAYS)("%s trusts only a private pod range", (overlay) => {
    const objects = render(`${copy.dir}/k8s/overlays/${overlay}`);
    const gateway = objects.find((o): o is Deployment => o.kind === "Deployment" && o.metadata.name === "gateway");
    const env = gateway?.spec.template.spec.containers.find((c) => c.name === "service")?.env ?? [];
    const values = env.filter((e) => e.name === "TRUST_PROXY").map((e) => e.value ?? "");
    expect(values).toHaveLength(1);
    const trusted = parseTrustProxy(values[0] ?? "");
    expect(Array.isArray(trusted), JSON.stringify(trusted)).toBe(true);
    for (const cidr of trusted as string[]) expect(isPrivateRange(cidr), cidr).toBe(true);
  });
});
