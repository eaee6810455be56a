// Compiles each service's entry (services/<name>/src/main.ts) and the operator commands (scripts/migrate.ts,
// scripts/admin.ts) into one ES module each. The workspace libraries (@treasury/*) export TypeScript sources,
// so they are bundled in; every other package stays an import that the image's production node_modules answers.
// Usage: node deploy/bundle.mjs OUT_DIR [NAME…]   writes OUT_DIR/services/<name>/dist/main.js for each service and
// OUT_DIR/dist/{migrate,admin}.js; NAMEs (services, `migrate`, `admin`) limit it to those entries. A service's own
// `npm run build` writes its entry into the repository (services/<name>/dist, ignored by git).
import { readdirSync, existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const [outArg, ...only] = process.argv.slice(2);
if (outArg === undefined || outArg === "") {
  console.error("usage: node deploy/bundle.mjs OUT_DIR [NAME…]");
  process.exit(2);
}
const outDir = resolve(outArg);

/** Bare imports of anything but the workspace's own packages are left to node_modules at run time. */
const externalPackages = {
  name: "external-packages",
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, (args) => {
      if (args.path.startsWith("@treasury/") || args.path.startsWith("node:")) return undefined;
      return { path: args.path, external: true };
    });
  },
};

const services = readdirSync(join(root, "services")).filter((s) => existsSync(join(root, "services", s, "src", "main.ts")));
const allEntries = [
  ...services.map((s) => ({ name: s, in: join(root, "services", s, "src", "main.ts"), out: join(outDir, "services", s, "dist", "main") })),
  // The ledger reads bank statements in worker threads (services/ledger/src/statement-parser/pool.ts): the worker's
  // module is an entry of its own, built with the ledger, beside its main.js.
  {
    name: "ledger",
    in: join(root, "services", "ledger", "src", "statement-parser", "worker.ts"),
    out: join(outDir, "services", "ledger", "dist", "statement-parser-worker"),
  },
  // scripts/migrate.ts finds services/<name>/migrations one folder up from itself: dist/ keeps that true.
  { name: "migrate", in: join(root, "scripts", "migrate.ts"), out: join(outDir, "dist", "migrate") },
  { name: "admin", in: join(root, "scripts", "admin.ts"), out: join(outDir, "dist", "admin") },
];
const unknown = only.filter((n) => !allEntries.some((e) => e.name === n));
if (unknown.length > 0) {
  console.error(`bundle: unknown entries ${unknown.join(", ")}; known: ${allEntries.map((e) => e.name).join(", ")}`);
  process.exit(2);
}
const entries = only.length === 0 ? allEntries : allEntries.filter((e) => only.includes(e.name));

for (const entry of entries) {
  await build({
    entryPoints: [entry.in],
    outfile: `${entry.out}.js`,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    sourcemap: "linked",
    // Stack traces name the sources (node --enable-source-maps); the map does not embed them.
    sourcesContent: false,
    logLevel: "warning",
    plugins: [externalPackages],
  });
}
console.log(`bundle: ${[...new Set(entries.map((e) => e.name))].join(", ")} in ${outDir}`);
