// Reading deploy/Dockerfile and .dockerignore the way the Docker builder does, for the image tests: the final
// stage's environment, user and command, and the build context the ignore rules leave.
import { copyFileSync, lstatSync, mkdirSync, readdirSync } from "node:fs";
import { join } from "node:path";

export interface Stage {
  from: string;
  name: string | undefined;
  instructions: { op: string; args: string }[];
}

/** The stages of a Dockerfile, with continuation lines joined and comments dropped. */
export function parseDockerfile(text: string): Stage[] {
  const lines = text
    .replace(/\\\r?\n/g, " ")
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== "" && !l.startsWith("#"));
  const stages: Stage[] = [];
  for (const line of lines) {
    const m = /^([A-Za-z]+)\s+(.*)$/.exec(line);
    if (m === null) continue;
    const op = (m[1] ?? "").toUpperCase();
    const args = m[2] ?? "";
    if (op === "FROM") {
      const [from = "", , name] = args.split(/\s+/);
      stages.push({ from, name, instructions: [] });
    } else {
      stages.at(-1)?.instructions.push({ op, args });
    }
  }
  return stages;
}

/** ENV instructions of a stage, in order (`ENV A=1 B=2`). */
export function stageEnv(stage: Stage): Record<string, string> {
  const env: Record<string, string> = {};
  for (const { op, args } of stage.instructions) {
    if (op !== "ENV") continue;
    for (const m of args.matchAll(/([A-Za-z_][A-Za-z0-9_]*)=("[^"]*"|\S*)/g)) env[m[1] ?? ""] = (m[2] ?? "").replace(/^"|"$/g, "");
  }
  return env;
}

/** The exec-form CMD of a stage. */
export function stageCmd(stage: Stage): string[] {
  const cmd = stage.instructions.filter((i) => i.op === "CMD").at(-1);
  if (cmd === undefined) throw new Error("the stage has no CMD");
  return JSON.parse(cmd.args) as string[];
}

/** One .dockerignore rule as a regular expression over slash-separated paths relative to the context. */
function ruleRegExp(pattern: string): RegExp {
  let re = "";
  const p = pattern.replace(/^\/+/, "").replace(/\/+$/, "");
  for (let i = 0; i < p.length; i++) {
    const c = p[i] ?? "";
    if (c === "*" && p[i + 1] === "*") {
      // `**/` matches any number of folders, none included; a trailing `**` matches everything below.
      if (p[i + 2] === "/") {
        re += "(?:.*/)?";
        i += 2;
      } else {
        re += ".*";
        i += 1;
      }
    } else if (c === "*") re += "[^/]*";
    else if (c === "?") re += "[^/]";
    else re += c.replace(/[.+^${}()|[\]\\]/g, "\\$&");
  }
  return new RegExp(`^${re}$`);
}

/**
 * Whether .dockerignore rules leave `path` out of the context: the last rule that matches the path or one of
 * its parent folders decides, and `!` rules bring paths back.
 */
export function makeIgnore(dockerignore: string): (path: string) => boolean {
  const rules = dockerignore
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== "" && !l.startsWith("#"))
    .map((l) => (l.startsWith("!") ? { keep: true, re: ruleRegExp(l.slice(1).trim()) } : { keep: false, re: ruleRegExp(l) }));
  return (path) => {
    const parts = path.split("/");
    const candidates = parts.map((_, i) => parts.slice(0, i + 1).join("/"));
    let ignored = false;
    for (const rule of rules) if (candidates.some((c) => rule.re.test(c))) ignored = !rule.keep;
    return ignored;
  };
}

/** Copies what the build context holds (files and folders not ignored) from `from` to `to`. */
export function copyContext(from: string, to: string, ignored: (path: string) => boolean, rel = ""): number {
  let files = 0;
  for (const name of readdirSync(join(from, rel))) {
    const path = rel === "" ? name : `${rel}/${name}`;
    if (ignored(path)) continue;
    const stat = lstatSync(join(from, path));
    if (stat.isDirectory()) {
      mkdirSync(join(to, path), { recursive: true });
      files += copyContext(from, to, ignored, path);
    } else if (stat.isFile()) {
      mkdirSync(join(to, rel), { recursive: true });
      copyFileSync(join(from, path), join(to, path));
      files += 1;
    }
  }
  return files;
}
