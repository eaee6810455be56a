// Rendering and reading the Kubernetes manifests for the deploy tests: a copy of k8s/ with the overlays' secret
// files made by k8s/make-secrets.sh, rendered by `kubectl kustomize`, and each object checked against the
// Kubernetes, CloudNativePG, Prometheus-operator and External Secrets schemas (kubernetes-models packages).
import { execFileSync } from "node:child_process";
import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";

export type K8sObject = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [key: string]: unknown;
};

export function parseObjects(text: string): K8sObject[] {
  return parseAllDocuments(text)
    .map((d) => d.toJS() as K8sObject | null)
    .filter((o): o is K8sObject => o !== null && typeof o === "object");
}

/** A copy of k8s/ whose overlays have their (never committed) secret files, as an operator would make them. */
export function preparedCopy(root: string): { dir: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), "treasury-k8s-"));
  cpSync(join(root, "k8s"), join(dir, "k8s"), { recursive: true, filter: (src) => !/\/secrets\/[^/]+\.env$/.test(src) });
  const env = { ...process.env, BACKUP_ACCESS_KEY_ID: "test-access-key", BACKUP_ACCESS_SECRET_KEY: "test-secret-key" };
  for (const overlay of ["dev", "prod"])
    execFileSync("bash", [join(dir, "k8s", "make-secrets.sh"), join(dir, "k8s", "overlays", overlay)], { env, stdio: "pipe" });
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

export function render(kustomizationDir: string): K8sObject[] {
  return parseObjects(execFileSync("kubectl", ["kustomize", kustomizationDir], { encoding: "utf8", maxBuffer: 64 * 1024 * 1024 }));
}

type ModelClass = new (data: unknown) => { validate(): void };

/** The module of kubernetes-models (or a CRD package of it) that holds an apiVersion's models. */
function modelModule(apiVersion: string): string {
  const [group, version] = apiVersion.includes("/") ? apiVersion.split("/") : ["", apiVersion];
  if (group === "postgresql.cnpg.io") return `@kubernetes-models/cloudnative-pg/${group}/${version}`;
  if (group === "monitoring.coreos.com") return `@kubernetes-models/prometheus-operator/${group}/${version}`;
  if (group === "external-secrets.io") return `@kubernetes-models/external-secrets/${group}/${version}`;
  return group === "" ? `kubernetes-models/${version}` : `kubernetes-models/${group}/${version}`;
}

/** Validates an object against its kind's schema; throws with the schema's complaint. */
export async function validateObject(obj: K8sObject): Promise<void> {
  const mod = (await import(modelModule(obj.apiVersion))) as Record<string, ModelClass | undefined>;
  const Model = mod[obj.kind];
  if (Model === undefined) throw new Error(`no schema for ${obj.apiVersion} ${obj.kind}`);
  new Model(normalized(obj)).validate();
}

/**
 * kustomize folds long base64 values of Secrets over several lines; the API server's decoder skips the line
 * breaks, the schema's `byte` format does not, so they are joined before validation.
 */
function normalized(obj: K8sObject): K8sObject {
  if (obj.kind !== "Secret" || typeof obj["data"] !== "object" || obj["data"] === null) return obj;
  const data = Object.fromEntries(Object.entries(obj["data"] as Record<string, string>).map(([k, v]) => [k, v.replace(/\s+/g, "")]));
  return { ...obj, data };
}
