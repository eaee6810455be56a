// Proves the alert rules in k8s/monitoring can fire: every metric an expression names is one a service exports
// (declared in the services' and the kit's code), every label they group or filter by is one that metric has,
// and every alert says how urgent it is and what to do.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse, parseAllDocuments } from "yaml";
import { repoRoot } from "@treasury/testing";

interface Rule {
  alert?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

const root = repoRoot();

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (name === "node_modules") continue;
    if (statSync(path).isDirectory()) out.push(...sourceFiles(path));
    else if (name.endsWith(".ts") && !name.endsWith(".test.ts")) out.push(path);
  }
  return out;
}

/** Metric name → its label names, from every `new Histogram|Gauge|Counter|Summary({ name, labelNames })`. */
function declaredMetrics(): Map<string, { type: string; labels: Set<string> }> {
  const metrics = new Map<string, { type: string; labels: Set<string> }>();
  for (const file of [...sourceFiles(join(root, "libs")), ...sourceFiles(join(root, "services"))]) {
    const text = readFileSync(file, "utf8");
    for (const m of text.matchAll(/new (Histogram|Gauge|Counter|Summary)(?:<[^>]*>)?\(\{\s*name:\s*"([a-z_:]+)"[\s\S]*?\}\)/g)) {
      const labels = /labelNames:\s*\[([^\]]*)\]/.exec(m[0])?.[1] ?? "";
      metrics.set(m[2] ?? "", { type: m[1] ?? "", labels: new Set([...labels.matchAll(/"([a-z_]+)"/g)].map((l) => l[1] ?? "")) });
    }
  }
  return metrics;
}

const PROMQL_WORDS = new Set(["by", "without", "on", "ignoring", "group_left", "group_right", "sum", "max", "min", "avg", "count", "rate", "irate", "increase", "histogram_quantile", "and", "or", "unless", "offset", "bool"]);
const HISTOGRAM_SUFFIXES = ["_bucket", "_sum", "_count"];

/** The metric names of an expression: identifiers that are not functions, keywords, labels or durations. */
function metricsOf(expr: string): string[] {
  const withoutStrings = expr.replace(/"[^"]*"/g, '""').replace(/\[[^\]]*\]/g, "");
  const withoutGroupings = withoutStrings.replace(/\b(by|without|on|ignoring)\s*\([^)]*\)/g, "");
  const withoutMatchers = withoutGroupings.replace(/\{[^}]*\}/g, "");
  return [...withoutMatchers.matchAll(/\b([a-z_][a-z0-9_:]*)\b(?!\s*\()/g)].map((m) => m[1] ?? "").filter((w) => !PROMQL_WORDS.has(w));
}

/** Label names an expression groups or filters by. */
function labelsOf(expr: string): string[] {
  const grouped = [...expr.matchAll(/\b(?:by|without)\s*\(([^)]*)\)/g)].flatMap((m) => (m[1] ?? "").split(",").map((s) => s.trim()));
  const matched = [...expr.matchAll(/\{([^}]*)\}/g)].flatMap((m) => [...(m[1] ?? "").matchAll(/([a-z_]+)\s*(?:=~|!~|!=|=)/g)].map((l) => l[1] ?? ""));
  return [...grouped, ...matched].filter(Boolean);
}

const rulesFile = parse(readFileSync(join(root, "k8s/monitoring/rules.yaml"), "utf8")) as { kind: string; spec: { groups: { name: string; rules: Rule[] }[] } };
const rules = rulesFile.spec.groups.flatMap((g) => g.rules);
const metrics = declaredMetrics();

describe("k8s/monitoring", () => {
  it("finds the services' metrics in the code (the check below is not vacuous)", () => {
    for (const name of ["rpc_duration_seconds", "errors_total", "outbox_lag_seconds", "consumer_pending", "http_request_duration_seconds", "checkout_completion_step_seconds", "webhook_delivery_lag_seconds"]) {
      expect(metrics.has(name), name).toBe(true);
    }
    expect(metrics.get("rpc_duration_seconds")?.labels).toEqual(new Set(["operation", "outcome"]));
    expect(metricsOf('histogram_quantile(0.99, sum by (le, step) (rate(checkout_completion_step_seconds_bucket{step="x"}[5m]))) > 2')).toEqual(["checkout_completion_step_seconds_bucket"]);
    expect(labelsOf('sum by (service) (rate(errors_total{code=~"a|b"}[5m]))')).toEqual(["service", "code"]);
  });

  it("names only metrics and labels the services export; every alert has a severity, summary and runbook", () => {
    expect(rulesFile.kind).toBe("PrometheusRule");
    expect(rules.length).toBeGreaterThanOrEqual(8);
    for (const r of rules) {
      expect(r.alert, r.expr).toMatch(/^Treasury[A-Za-z0-9]+$/);
      expect(r.for, r.alert).toMatch(/^\d+[smh]$/);
      expect(["page", "ticket"], r.alert).toContain(r.labels?.["severity"]);
      expect(r.annotations?.["summary"]?.length, r.alert).toBeGreaterThan(10);
      expect(r.annotations?.["runbook"]?.length, r.alert).toBeGreaterThan(80);
      const used = metricsOf(r.expr);
      expect(used.length, `${r.alert} names no metric`).toBeGreaterThan(0);
      const labelsAllowed = new Set(["service", "le"]);
      for (const name of used) {
        const suffix = HISTOGRAM_SUFFIXES.find((s) => name.endsWith(s));
        const base = suffix !== undefined && metrics.get(name.slice(0, -suffix.length))?.type === "Histogram" ? name.slice(0, -suffix.length) : name;
        const declared = metrics.get(base);
        expect(declared, `${r.alert}: ${name} is not a metric any service exports`).toBeDefined();
        for (const l of declared?.labels ?? []) labelsAllowed.add(l);
      }
      for (const l of labelsOf(r.expr)) expect(labelsAllowed.has(l), `${r.alert}: label ${l} is not on ${used.join(", ")}`).toBe(true);
    }
  });

  it("scrapes the port every deployment names `health` and the kustomization lists both files", () => {
    const kustomization = parse(readFileSync(join(root, "k8s/monitoring/kustomization.yaml"), "utf8")) as { resources: string[] };
    expect(kustomization.resources.sort()).toEqual(["podmonitor.yaml", "rules.yaml"]);
    const monitor = parse(readFileSync(join(root, "k8s/monitoring/podmonitor.yaml"), "utf8")) as { spec: { podMetricsEndpoints: { port: string; path: string }[] } };
    expect(monitor.spec.podMetricsEndpoints[0]).toMatchObject({ port: "health", path: "/metrics" });
    for (const service of ["gateway", "ledger", "payments", "payouts", "refunds", "receipts", "kyc", "webhooks"]) {
      const docs = parseAllDocuments(readFileSync(join(root, `k8s/base/${service}.yaml`), "utf8")).map((d) => d.toJS() as Record<string, unknown>);
      const deployment = docs.find((d) => d["kind"] === "Deployment") as { spec: { template: { metadata: { labels: Record<string, string> }; spec: { containers: { ports?: { name: string }[] }[] } } } } | undefined;
      expect(deployment, service).toBeDefined();
      expect(deployment?.spec.template.metadata.labels["app.kubernetes.io/part-of"], service).toBe("treasury");
      expect(deployment?.spec.template.spec.containers[0]?.ports?.some((p) => p.name === "health"), service).toBe(true);
    }
  });
});
