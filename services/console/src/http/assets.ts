/**
 * The console's static files, read once at start and served from /console/assets: its stylesheet and script
 * (assets/). No CDN: the page's Content-Security-Policy allows scripts and styles from this origin only.
 */
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { FastifyInstance } from "fastify";
import { BASE } from "../pages/layout.ts";

const TYPES: Record<string, string> = { css: "text/css; charset=utf-8", js: "text/javascript; charset=utf-8" };
const FILES = ["console.css", "console.js"] as const;

/** assets/ beside src/ (running from source) or beside dist/ (the image: dist/main.js). */
function assetsDir(): string {
  const candidates = [new URL("../../assets/", import.meta.url), new URL("../assets/", import.meta.url)].map((u) => fileURLToPath(u));
  const found = candidates.find((dir) => existsSync(`${dir}console.css`));
  if (found === undefined) throw new Error(`console assets not found in ${candidates.join(" or ")}`);
  return found;
}

export function registerAssets(app: FastifyInstance): void {
  const dir = assetsDir();
  for (const name of FILES) {
    const body = readFileSync(`${dir}${name}`);
    const type = TYPES[name.split(".").pop() ?? ""] ?? "application/octet-stream";
    app.get(`${BASE}/assets/${name}`, async (_req, reply) => reply.header("Cache-Control", "public, max-age=300").type(type).send(body));
  }
}
