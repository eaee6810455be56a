// Proves the Kubernetes manifests deploy what docs/deploy.md says: every overlay renders with `kubectl kustomize`
// once k8s/make-secrets.sh has made its secret files; every object validates against the Kubernetes,
// CloudNativePG, Prometheus-operator and External Secrets schemas; every container has resources, probes and the
// restricted security context; drains are possible; the database, NATS, network and connection budget are as
// designed.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { SERVICES } from "@treasury/contracts";
import { repoRoot } from "@treasury/testing";
import { parseObjects, preparedCopy, render, validateObject, type K8sObject } from "./manifests.ts";

interface Container {
  name: string;
  image?: string;
  command?: string[];
  env?: { name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string; optional?: boolean } } }[];
  ports?: { name?: string; containerPort: number }[];
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  readinessProbe?: { httpGet?: { path: string; port: string | number } };
  livenessProbe?: { httpGet?: { path: string; port: string | number } };
  securityContext?: { runAsNonRoot?: boolean; readOnlyRootFilesystem?: boolean; allowPrivilegeEscalation?: boolean; capabilities?: { drop?: string[] } };
}
interface PodSpec {
  containers: Container[];
  initContainers?: Container[];
  securityContext?: { runAsNonRoot?: boolean };
  affinity?: { podAntiAffinity?: unknown };
  automountServiceAccountToken?: boolean;
}
type Deployment = K8sObject & {
  spec: { replicas?: number; selector: { matchLabels: Record<string, string> }; template: { metadata: { labels: Record<string, string> }; spec: PodSpec } };
};

const root = repoRoot();
const OVERLAYS = ["dev", "prod"] as const;
const rendered: Record<string, K8sObject[]> = {};
let copy: ReturnType<typeof preparedCopy>;

beforeAll(() => {
  copy = preparedCopy(root);
  for (const overlay of OVERLAYS) rendered[overlay] = render(join(copy.dir, "k8s", "overlays", overlay));
  rendered["monitoring"] = render(join(copy.dir, "k8s", "monitoring"));
}, 60_000);
afterAll(() => copy?.remove());

const of = <T extends K8sObject = K8sObject>(overlay: string, kind: string): T[] => (rendered[overlay] ?? []).filter((o) => o.kind === kind) as T[];
const one = <T extends K8sObject = K8sObject>(overlay: string, kind: string, name: string): T => {
  const found = of<T>(overlay, kind).find((o) => o.metadata.name === name);
  if (found === undefined) throw new Error(`${overlay}: no ${kind} ${name}`);
  return found;
};
const envOf = (c: Container, name: string): string | undefined => c.env?.find((e) => e.name === name)?.value;
const serviceDeployments = (overlay: string): Deployment[] =>
  of<Deployment>(overlay, "Deployment").filter((d) => d.spec.template.metadata.labels["treasury.io/role"] === "service");
const mainContainer = (d: Deployment): Container => {
  const c = d.spec.template.spec.containers[0];
  if (c === undefined) throw new Error(`${d.metadata.name} has no container`);
  return c;
};

/** What the restricted policy demands of one container; the empty list means it complies. */
export function containerProblems(c: Container, opts: { probes: boolean }): string[] {
  const problems: string[] = [];
  if (c.resources?.requests?.["cpu"] === undefined || c.resources.requests["memory"] === undefined) problems.push("requests cpu and memory");
  if (c.resources?.limits?.["memory"] === undefined) problems.push("a memory limit");
  const sc = c.securityContext;
  if (sc?.runAsNonRoot !== true) problems.push("runAsNonRoot");
  if (sc?.readOnlyRootFilesystem !== true) problems.push("readOnlyRootFilesystem");
  if (sc?.allowPrivilegeEscalation !== false) problems.push("allowPrivilegeEscalation: false");
  if (!(sc?.capabilities?.drop ?? []).includes("ALL")) problems.push("capabilities drop ALL");
  if (opts.probes && (c.readinessProbe === undefined || c.livenessProbe === undefined)) problems.push("readiness and liveness probes");
  return problems;
}

describe("k8s manifests", () => {
  it("render for every overlay with the generated secrets, in the treasury namespace", () => {
    for (const overlay of OVERLAYS) {
      const objects = rendered[overlay] ?? [];
      expect(objects.length, overlay).toBeGreaterThan(40);
      for (const o of objects.filter((x) => x.kind !== "Namespace")) expect(o.metadata.namespace, `${overlay} ${o.kind}/${o.metadata.name}`).toBe("treasury");
      expect(of(overlay, "Namespace").map((n) => n.metadata.name)).toEqual(["treasury"]);
    }
  });

  it("validate against the Kubernetes and the operators' schemas (and the check rejects a broken object)", async () => {
    const examples = parseObjects(readFileSync(join(root, "k8s/examples/external-secrets.yaml"), "utf8"));
    expect(examples.length).toBeGreaterThan(0);
    for (const o of [...OVERLAYS.flatMap((ov) => rendered[ov] ?? []), ...(rendered["monitoring"] ?? []), ...examples]) {
      await expect(validateObject(o), `${o.kind}/${o.metadata.name}`).resolves.toBeUndefined();
    }
    const cluster = one(OVERLAYS[1], "Cluster", "treasury-pg") as K8sObject & { spec: Record<string, unknown> };
    await expect(validateObject({ ...cluster, spec: { ...cluster.spec, instances: "three" } })).rejects.toThrow(/instances/);
    const deployment = serviceDeployments("prod")[0] as Deployment;
    await expect(validateObject({ ...deployment, spec: { ...deployment.spec, replicas: "two" } } as K8sObject)).rejects.toThrow(/replicas/);
  });

  it("give every container resources and the restricted security context, every long-running one probes (the check flags a bare container)", () => {
    expect(containerProblems({ name: "bare" }, { probes: true })).toHaveLength(7);
    for (const overlay of OVERLAYS) {
      for (const d of of<Deployment>(overlay, "Deployment")) {
        const pod = d.spec.template.spec;
        expect(pod.securityContext?.runAsNonRoot, `${overlay} ${d.metadata.name} pod`).toBe(true);
        expect(pod.automountServiceAccountToken, `${overlay} ${d.metadata.name}`).toBe(false);
        expect(pod.affinity?.podAntiAffinity, `${overlay} ${d.metadata.name} anti-affinity`).toBeDefined();
        for (const c of pod.containers) expect(containerProblems(c, { probes: true }), `${overlay} ${d.metadata.name}/${c.name}`).toEqual([]);
        for (const c of pod.initContainers ?? []) expect(containerProblems(c, { probes: false }), `${overlay} ${d.metadata.name}/${c.name} (init)`).toEqual([]);
      }
    }
  });

  it("run every service from the image's compiled entry, probing /healthz and /readyz on HEALTH_PORT", () => {
    for (const overlay of OVERLAYS) {
      const deployments = serviceDeployments(overlay);
      expect(deployments.map((d) => d.metadata.name).sort(), overlay).toEqual([...SERVICES].sort());
      for (const d of deployments) {
        const c = mainContainer(d);
        expect(c.command, d.metadata.name).toEqual(["node", "--enable-source-maps", `services/${d.metadata.name}/dist/main.js`]);
        const healthPort = c.ports?.find((p) => p.name === "health")?.containerPort;
        expect(String(healthPort), d.metadata.name).toBe(envOf(c, "HEALTH_PORT"));
        expect(c.readinessProbe?.httpGet, d.metadata.name).toEqual({ path: "/readyz", port: "health" });
        expect(c.livenessProbe?.httpGet, d.metadata.name).toEqual({ path: "/healthz", port: "health" });
      }
    }
  });

  it("migrate before each service starts, from the same image, as the database owner", () => {
    for (const overlay of OVERLAYS) {
      for (const d of serviceDeployments(overlay)) {
        const init = d.spec.template.spec.initContainers ?? [];
        expect(
          init.map((c) => c.name),
          d.metadata.name,
        ).toEqual(["migrate"]);
        expect(init[0]?.image, d.metadata.name).toBe(mainContainer(d).image);
        expect(init[0]?.command).toEqual(["node", "--enable-source-maps", "dist/migrate.js"]);
        expect(init[0]?.env?.find((e) => e.name === "MIGRATOR_URI")?.valueFrom?.secretKeyRef).toEqual({ name: "treasury-pg-app", key: "uri" });
      }
    }
    expect(mainContainer(one<Deployment>("prod", "Deployment", "gateway")).image).toMatch(/^registry\.example\.com\/treasury:/);
  });

  it("let a node drain: every Deployment has a PDB that allows an eviction, every service an HPA, the ledger at least 2 replicas", () => {
    for (const overlay of OVERLAYS) {
      const pdbs = of<K8sObject & { spec: { maxUnavailable?: number; minAvailable?: number; selector: { matchLabels: Record<string, string> } } }>(
        overlay,
        "PodDisruptionBudget",
      );
      const hpas = of<K8sObject & { spec: { minReplicas: number; maxReplicas: number; scaleTargetRef: { name: string } } }>(overlay, "HorizontalPodAutoscaler");
      for (const d of of<Deployment>(overlay, "Deployment")) {
        const pdb = pdbs.find((p) => Object.entries(p.spec.selector.matchLabels).every(([k, v]) => d.spec.template.metadata.labels[k] === v));
        expect(pdb, `${overlay} ${d.metadata.name} PDB`).toBeDefined();
        const replicas = d.spec.replicas ?? 1;
        const allowed = pdb?.spec.maxUnavailable !== undefined ? pdb.spec.maxUnavailable : replicas - (pdb?.spec.minAvailable ?? replicas);
        expect(allowed, `${overlay} ${d.metadata.name}: its PDB blocks every eviction`).toBeGreaterThanOrEqual(1);
      }
      for (const d of serviceDeployments(overlay)) {
        const hpa = hpas.find((h) => h.spec.scaleTargetRef.name === d.metadata.name);
        expect(hpa, `${overlay} ${d.metadata.name} HPA`).toBeDefined();
        expect(hpa?.spec.maxReplicas ?? 0).toBeGreaterThanOrEqual(hpa?.spec.minReplicas ?? 1);
      }
    }
    expect(one<Deployment>("prod", "Deployment", "ledger").spec.replicas).toBeGreaterThanOrEqual(2);
    expect(one<K8sObject & { spec: { minReplicas: number } }>("prod", "HorizontalPodAutoscaler", "ledger").spec.minReplicas).toBeGreaterThanOrEqual(2);
  });

  it("run PostgreSQL as 3 instances with a synchronous standby, WAL archiving, nightly backups and a role per service", () => {
    const cluster = one<
      K8sObject & {
        spec: {
          instances: number;
          postgresql: { synchronous?: { method: string; number: number }; parameters: Record<string, string> };
          backup?: { barmanObjectStore?: { destinationPath: string; wal?: unknown } };
          managed: { roles: { name: string; passwordSecret: { name: string } }[] };
          bootstrap: { initdb: { owner: string } };
        };
      }
    >("prod", "Cluster", "treasury-pg");
    expect(cluster.spec.instances).toBe(3);
    expect(cluster.spec.postgresql.synchronous?.number).toBeGreaterThanOrEqual(1);
    expect(cluster.spec.backup?.barmanObjectStore?.destinationPath).toMatch(/^s3:\/\//);
    expect(cluster.spec.backup?.barmanObjectStore?.wal).toBeDefined();
    const backups = of<K8sObject & { spec: { cluster: { name: string }; schedule: string } }>("prod", "ScheduledBackup");
    expect(backups.map((b) => b.spec.cluster.name)).toEqual(["treasury-pg"]);
    const secrets = new Set(of("prod", "Secret").map((s) => s.metadata.name));
    expect(cluster.spec.managed.roles.map((r) => r.name).sort()).toEqual(SERVICES.map((s) => `${s}_svc`).sort());
    for (const r of cluster.spec.managed.roles) expect(secrets.has(r.passwordSecret.name), r.passwordSecret.name).toBe(true);
    expect(secrets.has("treasury-pg-backup")).toBe(true);
    expect(of("dev", "ScheduledBackup")).toEqual([]);
  });

  it("read only Secrets and keys the overlay generates or the operator makes", () => {
    for (const overlay of OVERLAYS) {
      const generated = new Map(of<K8sObject & { data?: Record<string, string> }>(overlay, "Secret").map((s) => [s.metadata.name, Object.keys(s.data ?? {})]));
      for (const d of of<Deployment>(overlay, "Deployment")) {
        for (const c of [...d.spec.template.spec.containers, ...(d.spec.template.spec.initContainers ?? [])]) {
          for (const e of c.env ?? []) {
            const ref = e.valueFrom?.secretKeyRef;
            if (ref === undefined || ref.name === "treasury-pg-app") continue;
            expect(generated.get(ref.name), `${overlay} ${d.metadata.name}/${c.name} ${e.name} → ${ref.name}/${ref.key}`).toContain(ref.key);
          }
        }
      }
    }
    const payments = mainContainer(serviceDeployments("prod").find((d) => d.metadata.name === "payments") as Deployment);
    for (const [name, key] of [
      ["STRIPE_SECRET_KEY", "secret-key"],
      ["STRIPE_WEBHOOK_SECRET", "webhook-secret"],
    ])
      expect(payments.env?.find((e) => e.name === name)?.valueFrom?.secretKeyRef, name).toMatchObject({
        name: expect.stringMatching(/^treasury-stripe/),
        key,
        optional: true,
      });
  });

  it("route the ledger to the primary and the others through a session pooler, within max_connections", () => {
    const budget = connectionBudget("prod");
    expect(budget.used, JSON.stringify(budget)).toBeLessThanOrEqual(budget.max);
    for (const d of serviceDeployments("prod")) {
      const url = envOf(mainContainer(d), "DATABASE_URL") ?? "";
      expect(new URL(url).hostname, d.metadata.name).toBe(d.metadata.name === "ledger" ? "treasury-pg-rw" : "treasury-pg-pooler");
    }
  });

  it("create EVENTS with 3 replicas on the 3-node JetStream cluster of the NATS values, 1 in dev", () => {
    const values = parse(readFileSync(join(root, "k8s/nats/values.yaml"), "utf8")) as {
      config: { cluster: { enabled: boolean; replicas: number }; jetstream: { enabled: boolean; fileStore: { enabled: boolean; pvc: { size: string } } } };
    };
    expect(values.config.cluster).toMatchObject({ enabled: true, replicas: 3 });
    expect(values.config.jetstream).toMatchObject({ enabled: true, fileStore: { enabled: true } });
    const dev = parse(readFileSync(join(root, "k8s/nats/values-dev.yaml"), "utf8")) as { config: { cluster: { enabled: boolean } } };
    expect(dev.config.cluster.enabled).toBe(false);
    for (const [overlay, replicas] of [
      ["prod", "3"],
      ["dev", "1"],
    ] as const) {
      for (const d of serviceDeployments(overlay)) {
        const c = mainContainer(d);
        expect(envOf(c, "EVENTS_REPLICAS"), `${overlay} ${d.metadata.name}`).toBe(replicas);
        expect(envOf(c, "NATS_URL")).toBe("nats://nats:4222");
        expect(envOf(c, "OTEL_EXPORTER_OTLP_ENDPOINT")).toBe("http://otel-collector:4318");
      }
    }
  });

  it("serve both listeners through one TLS Ingress, and let nothing else reach the gateway", () => {
    const ingress = one<
      K8sObject & {
        spec: { tls: { hosts: string[] }[]; rules: { host: string; http: { paths: { backend: { service: { name: string; port: { name: string } } } }[] } }[] };
      }
    >("prod", "Ingress", "treasury");
    const tlsHosts = ingress.spec.tls.flatMap((t) => t.hosts);
    expect(ingress.spec.rules.map((r) => r.http.paths[0]?.backend.service).sort((a, b) => (a?.port.name ?? "").localeCompare(b?.port.name ?? ""))).toEqual([
      { name: "gateway", port: { name: "alt" } },
      { name: "gateway", port: { name: "http" } },
    ]);
    for (const r of ingress.spec.rules) expect(tlsHosts).toContain(r.host);
  });

  it("deny by default; the gateway takes traffic from the ingress controller only; services reach NATS, PostgreSQL and the collector; webhooks and risk's alerts the internet and payments the processor's HTTPS, none a private range", () => {
    type Peer = {
      podSelector?: { matchLabels?: Record<string, string> };
      namespaceSelector?: { matchLabels?: Record<string, string> };
      ipBlock?: { cidr: string; except?: string[] };
    };
    type Policy = K8sObject & {
      spec: {
        podSelector: { matchLabels?: Record<string, string> };
        policyTypes: string[];
        ingress?: { from?: Peer[]; ports?: { port: number }[] }[];
        egress?: { to?: Peer[]; ports?: { port: number }[] }[];
      };
    };
    const policies = of<Policy>("prod", "NetworkPolicy");
    const byName = (n: string) => policies.find((p) => p.metadata.name === n);
    expect(byName("default-deny")?.spec).toEqual({ podSelector: {}, policyTypes: ["Ingress", "Egress"] });
    const selects = (p: Policy, labels: Record<string, string>) => Object.entries(p.spec.podSelector.matchLabels ?? {}).every(([k, v]) => labels[k] === v);

    const gatewayLabels = one<Deployment>("prod", "Deployment", "gateway").spec.template.metadata.labels;
    const gatewayIngress = policies.filter((p) => selects(p, gatewayLabels)).flatMap((p) => p.spec.ingress ?? []);
    const fromIngress = gatewayIngress.filter((r) =>
      r.from?.some((f) => f.namespaceSelector?.matchLabels?.["kubernetes.io/metadata.name"] === "ingress-nginx"),
    );
    expect(fromIngress.flatMap((r) => r.ports?.map((p) => p.port) ?? []).sort()).toEqual([8080, 8081]);
    for (const r of gatewayIngress.filter((x) => !fromIngress.includes(x))) expect(r.ports?.map((p) => p.port)).toEqual([9100]);

    for (const d of serviceDeployments("prod")) {
      const labels = d.spec.template.metadata.labels;
      const egress = policies.filter((p) => selects(p, labels) && p.spec.policyTypes.includes("Egress")).flatMap((p) => p.spec.egress ?? []);
      const targets = egress.flatMap((r) => r.to ?? []);
      const podTargets = targets
        .filter((t) => t.podSelector !== undefined && t.namespaceSelector === undefined)
        .map((t) => JSON.stringify(t.podSelector?.matchLabels));
      const allowed = [
        '{"app.kubernetes.io/name":"nats"}',
        '{"cnpg.io/cluster":"treasury-pg"}',
        '{"cnpg.io/poolerName":"treasury-pg-pooler"}',
        '{"app.kubernetes.io/name":"otel-collector"}',
        // The gateway's alt listener forwards /console to the operator console (ADR 0021).
        ...(d.metadata.name === "gateway" ? ['{"app.kubernetes.io/name":"redis"}', '{"app.kubernetes.io/name":"console"}'] : []),
      ];
      for (const t of podTargets) expect(allowed, `${d.metadata.name} → ${t}`).toContain(t);
      expect(
        egress.every((r) => (r.to ?? []).length > 0),
        `${d.metadata.name}: an egress rule open to everything`,
      ).toBe(true);
      const blocks = targets.filter((t) => t.ipBlock !== undefined);
      if (!["webhooks", "payments", "risk"].includes(d.metadata.name)) expect(blocks, d.metadata.name).toEqual([]);
      else {
        expect(blocks.map((b) => b.ipBlock?.cidr).sort()).toEqual(["0.0.0.0/0", "::/0"]);
        const v4 = blocks.find((b) => b.ipBlock?.cidr === "0.0.0.0/0")?.ipBlock?.except ?? [];
        for (const range of ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16"]) expect(v4).toContain(range);
      }
      // Payments reaches the card processor's API over HTTPS only; webhook receivers may listen on any port.
      const internetPorts = egress.filter((r) => (r.to ?? []).some((t) => t.ipBlock !== undefined)).flatMap((r) => r.ports?.map((p) => p.port) ?? []);
      if (d.metadata.name === "payments") expect(internetPorts).toEqual([443]);
      // Risk's alerts: webhooks over HTTPS and email to an SMTP server's submission ports.
      if (d.metadata.name === "risk") expect(internetPorts.sort()).toEqual([443, 465, 587]);
    }
  });
});

/**
 * PostgreSQL connections at the HPAs' maxima: the ledger's pods directly (pool + the relay's session), the
 * poolers' server connections, one migration per service rolling out at once, and a reserve for the operator,
 * monitoring and operators' sessions.
 */
function connectionBudget(overlay: string): { max: number; used: number; parts: Record<string, number> } {
  const cluster = one<K8sObject & { spec: { postgresql: { parameters: Record<string, string> } } }>(overlay, "Cluster", "treasury-pg");
  const pooler = one<K8sObject & { spec: { instances: number; pgbouncer: { poolMode: string; parameters: Record<string, string> } } }>(
    overlay,
    "Pooler",
    "treasury-pg-pooler",
  );
  const hpaMax = (name: string) => one<K8sObject & { spec: { maxReplicas: number } }>(overlay, "HorizontalPodAutoscaler", name).spec.maxReplicas;
  const parts: Record<string, number> = {};
  for (const d of serviceDeployments(overlay)) {
    const c = mainContainer(d);
    const url = new URL(envOf(c, "DATABASE_URL") ?? "");
    if (url.hostname === "treasury-pg-pooler") {
      // Transaction pooling would hand a session's state (advisory locks, LISTEN, prepared statements) to others.
      expect(pooler.spec.pgbouncer.poolMode === "session" || url.searchParams.get("prepare") === "false", d.metadata.name).toBe(true);
      continue;
    }
    parts[d.metadata.name] = hpaMax(d.metadata.name) * (Number(envOf(c, "DB_POOL_MAX")) + 1);
  }
  parts["pooler"] = pooler.spec.instances * Number(pooler.spec.pgbouncer.parameters["max_db_connections"]);
  parts["migrations"] = SERVICES.length;
  parts["reserve"] = 3 + 20;
  const used = Object.values(parts).reduce((a, b) => a + b, 0);
  return { max: Number(cluster.spec.postgresql.parameters["max_connections"]), used, parts };
}
