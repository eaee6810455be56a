// Proves every overlay runs the gateway trusting exactly one proxy hop (the ingress controller, the only peer
// the NetworkPolicy lets in), with a value the gateway's own config parser accepts: never `true`, which would
// let any client choose the IP its rate limits and audit records are keyed by.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { repoRoot } from "@treasury/testing";
import { parseTrustProxy } from "../../services/gateway/src/trust-proxy.ts";
import { preparedCopy, render, type K8sObject } from "./manifests.ts";

type Deployment = K8sObject & { spec: { template: { spec: { containers: { name: string; env?: { name: string; value?: string }[] }[] } } } };

const OVERLAYS = ["dev", "prod"] as const;
let copy: ReturnType<typeof preparedCopy>;

beforeAll(() => {
  copy = preparedCopy(repoRoot());
});

afterAll(() => copy?.remove());

describe("gateway TRUST_PROXY in k8s", () => {
  it.each(OVERLAYS)("%s trusts exactly the ingress hop", (overlay) => {
    const objects = render(`${copy.dir}/k8s/overlays/${overlay}`);
    const gateway = objects.find((o): o is Deployment => o.kind === "Deployment" && o.metadata.name === "gateway");
    const env = gateway?.spec.template.spec.containers.find((c) => c.name === "service")?.env ?? [];
    const values = env.filter((e) => e.name === "TRUST_PROXY").map((e) => e.value ?? "");
    expect(values).toHaveLength(1);
    expect(parseTrustProxy(values[0] ?? "")).toBe(1);
  });
});
