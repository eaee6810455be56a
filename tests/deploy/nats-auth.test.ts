// Proves the deployments that do not generate the NATS authorization at start carry the permission matrix's (ADR 0011):
// the Helm values and the compose stack's configuration are what `npm run nats:config` renders now, nats-server accepts
// the configuration, every service in Kubernetes connects as itself over TLS with a password from a generated Secret,
// and the migrate step (the only one allowed to create the EVENTS stream) connects as `migrations`.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { NATS_IDENTITIES, natsPasswordVariable, SERVICES } from "@treasury/contracts";
import { repoRoot } from "@treasury/testing";
import { COMPOSE_CONFIG_FILE, HELM_VALUES_FILE, NATS_USERS_SECRET, renderComposeConfig, renderHelmValues } from "../../scripts/nats-config.ts";
import { preparedCopy, render, type K8sObject } from "./manifests.ts";

type Env = { name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } };
type Container = { name: string; env?: Env[]; volumeMounts?: { name: string; mountPath: string }[] };
type Deployment = K8sObject & {
  spec: {
    template: {
      metadata: { labels: Record<string, string> };
      spec: {
        containers: Container[];
        initContainers?: Container[];
        volumes?: { name: string; secret?: { secretName: string } }[];
      };
    };
  };
};

const root = repoRoot();
const rendered: Record<string, K8sObject[]> = {};
let copy: ReturnType<typeof preparedCopy>;

beforeAll(() => {
  copy = preparedCopy(root);
  for (const overlay of ["dev", "prod"]) rendered[overlay] = render(join(copy.dir, "k8s", "overlays", overlay));
}, 60_000);
afterAll(() => copy?.remove());

describe("NATS authorization of the deployments", () => {
  it("keeps the Helm values and the compose configuration as the matrix renders them", () => {
    expect(readFileSync(HELM_VALUES_FILE, "utf8"), "run `npm run nats:config`").toBe(renderHelmValues());
    expect(readFileSync(COMPOSE_CONFIG_FILE, "utf8"), "run `npm run nats:config`").toBe(renderComposeConfig());
  });

  it("renders a configuration nats-server accepts, and one it refuses without the passwords", () => {
    const env = { ...process.env, ...Object.fromEntries(NATS_IDENTITIES.map((i) => [natsPasswordVariable(i), `pw-${i}`])) };
    expect(execFileSync("nats-server", ["-t", "-c", COMPOSE_CONFIG_FILE], { env, encoding: "utf8", stdio: "pipe" })).toBe("");
    const without = Object.fromEntries(Object.entries(env).filter(([k]) => k !== natsPasswordVariable("ledger")));
    expect(() => execFileSync("nats-server", ["-t", "-c", COMPOSE_CONFIG_FILE], { env: without, stdio: "pipe" })).toThrow(/NATS_PASSWORD_LEDGER/);
  });

  it("gives the NATS servers every identity's password from the generated Secret, and TLS", () => {
    const values = parse(readFileSync(HELM_VALUES_FILE, "utf8")) as {
      config: { merge: { authorization: { users: { user: string; password: string }[] } } };
      container: { env: Record<string, { valueFrom: { secretKeyRef: { name: string; key: string } } }> };
    };
    expect(values.config.merge.authorization.users.map((u) => u.user)).toEqual([...NATS_IDENTITIES]);
    for (const u of values.config.merge.authorization.users)
      expect(u.password).toBe(`<< $${natsPasswordVariable(u.user as (typeof NATS_IDENTITIES)[number])} >>`);
    for (const i of NATS_IDENTITIES)
      expect(values.container.env[natsPasswordVariable(i)]?.valueFrom.secretKeyRef).toEqual({ name: NATS_USERS_SECRET, key: natsPasswordVariable(i) });
    const tls = (parse(readFileSync(join(root, "k8s/nats/values.yaml"), "utf8")) as { config: { nats: { tls: { enabled: boolean; secretName: string } } } })
      .config.nats.tls;
    expect(tls).toMatchObject({ enabled: true, secretName: "treasury-nats-tls" });
    for (const overlay of ["dev", "prod"]) {
      const secrets = (rendered[overlay] ?? []).filter((o) => o.kind === "Secret") as (K8sObject & { data?: Record<string, string> })[];
      const users = secrets.find((s) => s.metadata.name === NATS_USERS_SECRET);
      expect(Object.keys(users?.data ?? {}).sort(), overlay).toEqual(NATS_IDENTITIES.map(natsPasswordVariable).sort());
      expect(Object.keys(secrets.find((s) => s.metadata.name === "treasury-nats-tls")?.data ?? {}).sort(), overlay).toEqual(["ca.crt", "tls.crt", "tls.key"]);
    }
  });

  it("connects every service as itself, with its password from the Secret and the CA (never the server's key) mounted", () => {
    for (const overlay of ["dev", "prod"]) {
      const deployments = (rendered[overlay] ?? []).filter(
        (o) => o.kind === "Deployment" && (o as Deployment).spec.template.metadata.labels["treasury.io/role"] === "service",
      ) as Deployment[];
      expect(deployments.map((d) => d.metadata.name).sort()).toEqual([...SERVICES].sort());
      for (const d of deployments) {
        const name = d.metadata.name;
        const c = d.spec.template.spec.containers[0];
        const env = (k: string) => c?.env?.find((e) => e.name === k);
        expect(env("NATS_USER")?.value, `${overlay} ${name}`).toBe(name);
        expect(env("NATS_PASSWORD")?.valueFrom?.secretKeyRef, `${overlay} ${name}`).toEqual({
          name: NATS_USERS_SECRET,
          key: natsPasswordVariable(name as (typeof SERVICES)[number]),
        });
        const ca = env("NATS_TLS_CA")?.value ?? "";
        const mount = c?.volumeMounts?.find((m) => ca.startsWith(`${m.mountPath}/`));
        const volume = d.spec.template.spec.volumes?.find((v) => v.name === mount?.name);
        expect(volume?.secret?.secretName, `${overlay} ${name}`).toMatch(/^treasury-nats-ca(-|$)/);
        expect(new URL(env("DATABASE_URL")?.value ?? "").searchParams.get("sslmode"), `${overlay} ${name}`).toBe("require");
      }
    }
  });

  it("creates the EVENTS stream in the migrate step as the migrations identity: over TLS in Kubernetes, in compose too", () => {
    for (const overlay of ["dev", "prod"]) {
      const deployments = (rendered[overlay] ?? []).filter(
        (o) => o.kind === "Deployment" && (o as Deployment).spec.template.metadata.labels["treasury.io/role"] === "service",
      ) as Deployment[];
      for (const d of deployments) {
        const where = `${overlay} ${d.metadata.name}`;
        const init = d.spec.template.spec.initContainers?.find((c) => c.name === "migrate");
        const env = (c: Container | undefined, k: string) => c?.env?.find((e) => e.name === k);
        expect(env(init, "NATS_USER")?.value, where).toBe("migrations");
        expect(env(init, "NATS_PASSWORD")?.valueFrom?.secretKeyRef, where).toEqual({ name: NATS_USERS_SECRET, key: natsPasswordVariable("migrations") });
        expect(env(init, "NATS_URL")?.value, where).toBe(env(d.spec.template.spec.containers[0], "NATS_URL")?.value);
        expect(env(init, "EVENTS_REPLICAS")?.value, where).toBe(env(d.spec.template.spec.containers[0], "EVENTS_REPLICAS")?.value);
        const ca = env(init, "NATS_TLS_CA")?.value ?? "";
        const mount = init?.volumeMounts?.find((m) => ca.startsWith(`${m.mountPath}/`));
        expect(d.spec.template.spec.volumes?.find((v) => v.name === mount?.name)?.secret?.secretName, where).toMatch(/^treasury-nats-ca(-|$)/);
      }
    }
    const compose = parse(readFileSync(join(root, "docker-compose.yml"), "utf8")) as {
      services: Record<string, { environment?: Record<string, string>; depends_on?: Record<string, { condition: string }> }>;
    };
    const migrate = compose.services["migrate"];
    expect(migrate?.environment?.["NATS_USER"]).toBe("migrations");
    expect(migrate?.environment?.["NATS_PASSWORD"]).toMatch(/^\$\{NATS_PASSWORD_MIGRATIONS:\?/);
    expect(migrate?.depends_on?.["nats"]).toEqual({ condition: "service_healthy" });
    expect(compose.services["nats"]?.environment?.[natsPasswordVariable("migrations")]).toMatch(/^\$\{NATS_PASSWORD_MIGRATIONS:\?/);
  });
});
