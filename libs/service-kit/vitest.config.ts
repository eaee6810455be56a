import { defineConfig } from "vitest/config";

// Standalone runs of this package (`cd libs/service-kit && npx vitest run`) against the PostgreSQL and NATS
// named by TEST_DATABASE_URL / TEST_NATS_URL (defaults: local servers). The root config runs the same files
// under the shared harness.
export default defineConfig({
  test: {
    include: ["src/**/*.test.ts"],
    pool: "forks",
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
