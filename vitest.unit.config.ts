import { defineConfig } from "vitest/config";

/**
 * `npm run test:unit`: the unit tests alone (pure rules and use cases on fakes behind their ports), with no
 * PostgreSQL, NATS or Redis: seconds, for the loop of writing code. `npm test` runs them again with everything else.
 */
export default defineConfig({
  test: {
    include: ["bench/**/*.test.ts", "libs/**/src/**/*.test.ts", "services/**/src/**/*.test.ts", "services/**/test/**/*.test.ts"],
    exclude: ["**/node_modules/**", "**/dist/**", ".data/**", "**/*.int.test.ts"],
    allowOnly: !process.env.CI,
    pool: "forks",
    maxWorkers: 2,
    testTimeout: 10_000,
  },
});
