import { fileURLToPath } from "node:url";

/** Absolute path of the monorepo root (this file is libs/testing/src/paths.ts). */
export function repoRoot(): string {
  return fileURLToPath(new URL("../../../", import.meta.url)).replace(/\/$/, "");
}
