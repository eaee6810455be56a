import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["bench/**/*.test.ts", "libs/**/src/**/*.test.ts", "services/**/src/**/*.test.ts", "services/**/test/**/*.test.ts", "tests/**/*.test.ts"],
    exclude: ["**/node_modules/**", "**/dist/**", ".data/**"],
    // CI sets CI=true: there a `.only` fails the run instead of silently skipping the rest of its file (the lint
    // rule in eslint.config.js refuses it before that). Locally it focuses a run while iterating.
    allowOnly: !process.env.CI,
    // Real PostgreSQL + NATS + Redis for the run, and the migrated template database (libs/testing).
    globalSetup: ["libs/testing/src/global-setup.ts"],
    // Services hold sockets, timers and native handles: separate processes isolate files best. The machines
    // have 2 cores; more workers only add contention on the one PostgreSQL.
    pool: "forks",
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    teardownTimeout: 60_000,
  },
});
