// Proves the alert rules and the Grafana dashboard in k8s/monitoring can show something: every metric an
// expression names is one the running services register (scraped from them) and their code declares, every label
// they group or filter by is one that metric has, and every alert says how urgent it is and what to do.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse, parseAllDocuments } from "yaml";
import { repoRoot } from "@treasury/testing";
import { startStack, type Stack } from "../e2e/stack.ts";

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

const PROMQL_WORDS = new Set([
  "by",
  "without",
  "on",
  "ignoring",
  "group_left",
  "group_right",
  "sum",
  "max",
  "min",
  "avg",
  "count",
  "rate",
  "irate",
  "increase",
  "histogram_quantile",
  "and",
  "or",
  "unless",
  "offset",
  "bool",
]);
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

/** Series Prometheus records itself for every target it scrapes, with the target's labels. */
const PROMETHEUS_SERIES = new Map([["up", { type: "Gauge", labels: new Set<string>() }]]);
/** Labels Prometheus (with the operator's PodMonitor relabelling) attaches to every series of a target. */
const TARGET_LABELS = ["namespace", "pod", "container", "instance", "job", "endpoint"];

/** The series names one exposition text registers (`# TYPE` lines: present even before any sample). */
function registeredSeries(exposition: string): Set<string> {
  const names = new Set<string>();
  for (const m of exposition.matchAll(/^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (\w+)$/gm)) {
    const [, name = "", type = ""] = m;
    names.add(name);
    if (type === "histogram") for (const suffix of HISTOGRAM_SUFFIXES) names.add(name + suffix);
    if (type === "summary") for (const suffix of ["_sum", "_count"]) names.add(name + suffix);
  }
  return names;
}

interface DashboardPanel {
  type: string;
  title: string;
  datasource?: { uid: string };
  targets?: { expr: string; refId: string }[];
}

const rulesFile = parse(readFileSync(join(root, "k8s/monitoring/rules.yaml"), "utf8")) as { kind: string; spec: { groups: { name: string; rules: Rule[] }[] } };
const rules = rulesFile.spec.groups.flatMap((g) => g.rules);
const dashboard = JSON.parse(readFileSync(join(root, "k8s/monitoring/dashboard.json"), "utf8")) as {
  uid: string;
  title: string;
  panels: DashboardPanel[];
  templating: { list: { name: string; type: string }[] };
};
const dashboardExprs = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => ({ panel: p.title, expr: t.expr })));
const metrics = declaredMetrics();

/**
 * The problems of one expression: metric names no service declares, and labels the metrics it names do not have.
 * `registered` (from scrapes) also admits the process metrics prom-client registers by default.
 */
function exprProblems(expr: string, registered?: Set<string>): string[] {
  const problems: string[] = [];
  const used = metricsOf(expr);
  if (used.length === 0) problems.push("names no metric");
  const labelsAllowed = new Set(["service", "le", ...TARGET_LABELS]);
  for (const name of used) {
    const suffix = HISTOGRAM_SUFFIXES.find((s) => name.endsWith(s));
    const base = suffix !== undefined && metrics.get(name.slice(0, -suffix.length))?.type === "Histogram" ? name.slice(0, -suffix.length) : name;
    const declared = metrics.get(base) ?? PROMETHEUS_SERIES.get(base);
    if (declared === undefined && !(registered?.has(name) ?? false)) problems.push(`${name} is not a metric any service exports`);
    for (const l of declared?.labels ?? []) labelsAllowed.add(l);
  }
  for (const l of labelsOf(expr)) if (!labelsAllowed.has(l)) problems.push(`label ${l} is not on ${used.join(", ")}`);
  return problems;
}

describe("k8s/monitoring", () => {
  it("finds the services' metrics in the code (the check below is not vacuous)", () => {
    for (const name of [
      "rpc_duration_seconds",
      "errors_total",
      "outbox_lag_seconds",
      "consumer_pending",
      "http_request_duration_seconds",
      "checkout_completion_step_seconds",
      "webhook_delivery_lag_seconds",
    ]) {
      expect(metrics.has(name), name).toBe(true);
    }
    expect(metrics.get("rpc_duration_seconds")?.labels).toEqual(new Set(["operation", "outcome"]));
    expect(metricsOf('histogram_quantile(0.99, sum by (le, step) (rate(checkout_completion_step_seconds_bucket{step="x"}[5m]))) > 2')).toEqual([
      "checkout_completion_step_seconds_bucket",
    ]);
    expect(labelsOf('sum by (service) (rate(errors_total{code=~"a|b"}[5m]))')).toEqual(["service", "code"]);
    expect(exprProblems("sum(rate(no_such_metric_total[5m]))")).toEqual(["no_such_metric_total is not a metric any service exports"]);
    expect(exprProblems('sum by (shard) (rate(errors_total{code="x"}[5m]))')).toEqual(["label shard is not on errors_total"]);
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
      expect(exprProblems(r.expr), r.alert).toEqual([]);
    }
  });

  it("alert on every failure on-call must hear of", () => {
    const alerts = rules.map((r) => r.alert);
    for (const name of [
      "TreasuryTargetDown",
      "TreasuryJetStreamUnavailable",
      "TreasuryNatsDisconnected",
      "TreasuryLedgerInvariantBroken",
      "TreasuryLedgerVerifyNotRunning",
      "TreasuryOutboxLagging",
      "TreasuryWebhookDeliveryLag",
      "TreasuryGateway5xx",
    ]) {
      expect(alerts, name).toContain(name);
    }
    expect(new Set(alerts).size).toBe(alerts.length);
  });

  it("has a dashboard whose panels all query Prometheus through its variable, with metrics and labels the services have", () => {
    expect(dashboard.uid).toMatch(/^[a-z0-9-]{1,40}$/);
    expect(dashboard.templating.list).toContainEqual(expect.objectContaining({ name: "datasource", type: "datasource" }));
    const graphs = dashboard.panels.filter((p) => p.type !== "row");
    expect(graphs.length).toBeGreaterThanOrEqual(20);
    for (const p of graphs) {
      expect(p.datasource?.uid, p.title).toBe("${datasource}");
      expect(p.targets?.length, p.title).toBeGreaterThan(0);
    }
    // Process metrics (event loop, heap) come from prom-client's defaults, checked against scrapes below.
    for (const { panel, expr } of dashboardExprs)
      expect(
        exprProblems(expr).filter((e) => !e.startsWith("nodejs_")),
        panel,
      ).toEqual([]);
  });

  it("scrapes the port every deployment names `health` and the kustomization lists the monitor, the rules and the dashboard", () => {
    const kustomization = parse(readFileSync(join(root, "k8s/monitoring/kustomization.yaml"), "utf8")) as {
      resources: string[];
      configMapGenerator: { name: string; files: string[]; options: { labels: Record<string, string> } }[];
    };
    expect(kustomization.resources.sort()).toEqual(["podmonitor.yaml", "rules.yaml"]);
    expect(kustomization.configMapGenerator).toEqual([
      expect.objectContaining({
        files: ["treasury.json=dashboard.json"],
        options: expect.objectContaining({ labels: expect.objectContaining({ grafana_dashboard: "1" }) }),
      }),
    ]);
    const monitor = parse(readFileSync(join(root, "k8s/monitoring/podmonitor.yaml"), "utf8")) as {
      spec: { podMetricsEndpoints: { port: string; path: string }[] };
    };
    expect(monitor.spec.podMetricsEndpoints[0]).toMatchObject({ port: "health", path: "/metrics" });
    for (const service of ["gateway", "ledger", "payments", "payouts", "refunds", "receipts", "kyc", "webhooks"]) {
      const docs = parseAllDocuments(readFileSync(join(root, `k8s/base/${service}.yaml`), "utf8")).map((d) => d.toJS() as Record<string, unknown>);
      const deployment = docs.find((d) => d["kind"] === "Deployment") as
        | { spec: { template: { metadata: { labels: Record<string, string> }; spec: { containers: { ports?: { name: string }[] }[] } } } }
        | undefined;
      expect(deployment, service).toBeDefined();
      expect(deployment?.spec.template.metadata.labels["app.kubernetes.io/part-of"], service).toBe("treasury");
      expect(
        deployment?.spec.template.spec.containers[0]?.ports?.some((p) => p.name === "health"),
        service,
      ).toBe(true);
    }
  });
});

describe("k8s/monitoring against running services", () => {
  let stack: Stack;
  /** Every series name the running services register, from each one's registry and the gateway's /metrics. */
  const registered = new Set<string>();
  const expositions: string[] = [];

  beforeAll(async () => {
    stack = await startStack();
    expositions.push(await (await fetch(`http://127.0.0.1:${stack.gateway.ports.health}/metrics`)).text());
    for (const svc of Object.values(stack.services)) expositions.push(await svc.metrics.metrics());
    for (const text of expositions) for (const name of registeredSeries(text)) registered.add(name);
  }, 120_000);
  afterAll(async () => {
    await stack?.stop();
  });

  it("register every metric the alert rules and the dashboard name (the scrape finds the kit's and the services' own)", () => {
    for (const name of [
      "rpc_duration_seconds_bucket",
      "db_pool_connections_held",
      "nats_jetstream_available",
      "outbox_events_published_total",
      "ledger_invariant_violations",
      "ledger_post_batch_size_bucket",
      "webhook_delivery_lag_seconds",
      "http_request_duration_seconds_count",
      "nodejs_eventloop_lag_p99_seconds",
    ]) {
      expect(registered.has(name), name).toBe(true);
    }
    expect(registered.has("no_such_metric")).toBe(false);
    const exprs = [...rules.map((r) => ({ where: r.alert ?? r.expr, expr: r.expr })), ...dashboardExprs.map((d) => ({ where: d.panel, expr: d.expr }))];
    for (const { where, expr } of exprs) {
      const missing = metricsOf(expr).filter((name) => !registered.has(name) && !PROMETHEUS_SERIES.has(name));
      expect(missing, `${where}: ${expr}`).toEqual([]);
      expect(exprProblems(expr, registered), where).toEqual([]);
    }
  });

  it("report every service connected to NATS and answered by JetStream under its own NATS identity", () => {
    const values = (name: string) =>
      expositions.flatMap((text) => [...text.matchAll(new RegExp(`^${name}\\{service="([a-z]+)"\\} (\\S+)$`, "gm"))].map((m) => `${m[1]}=${m[2]}`));
    const services = ["gateway", ...Object.keys(stack.services)].sort();
    expect(values("nats_connected").sort()).toEqual(services.map((s) => `${s}=1`));
    expect(values("nats_jetstream_available").sort()).toEqual(services.map((s) => `${s}=1`));
  });
});
